package interruption

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse checks that Parse never panics, and that a message it accepts
// is consistent: a no-op names no instance, any other kind names some.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	for _, s := range []string{``, `{}`, `null`, `{"version":"0","detail":null}`, `{"version":"0","source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":null}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		msg, err := Parse(body)
		if err != nil {
			return
		}
		if (msg.Kind == KindNoOp) != (len(msg.InstanceIDs) == 0) {
			t.Errorf("kind %q with instances %v", msg.Kind, msg.InstanceIDs)
		}
		for _, id := range msg.InstanceIDs {
			if id == "" {
				t.Errorf("empty instance id in %v", msg.InstanceIDs)
			}
		}
	})
}
