package manifest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzConvert feeds arbitrary bytes to the converter (seeded with every test
// manifest). Whatever the input, Convert must not panic, and its output must
// be a fixed point: converting it again to the same version passes every
// document through unchanged.
func FuzzConvert(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	more, _ := filepath.Glob("../../../test/conformance/*/*/*.yaml")
	convert, _ := filepath.Glob("../../../test/conformance/karpenter-convert/*.yaml")
	more = append(more, convert...)
	for _, file := range append(files, more...) {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data, false)
		}
	}
	f.Add([]byte("---\n--- {a: 1}\n...\n"), true)
	c, err := sharedConverter()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, toV1beta1 bool) {
		opts := Options{ContinueOnError: true}
		if toV1beta1 {
			opts.To = TargetV1beta1
		}
		first, _ := c.ConvertAll([]Input{{Source: "in.yaml", Data: data}}, opts)
		if len(first.Output) == 0 {
			return
		}
		second, err := c.ConvertAll([]Input{{Source: "out.yaml", Data: first.Output}}, opts)
		if err != nil {
			t.Fatalf("converting the output again: %v\noutput:\n%s", err, first.Output)
		}
		if second.Converted != 0 {
			t.Errorf("converting the output again converted %d objects", second.Converted)
		}
		if diff := cmp.Diff(string(first.Output), string(second.Output)); diff != "" {
			t.Errorf("the output is not a fixed point (-first +second):\n%s", diff)
		}
	})
}
