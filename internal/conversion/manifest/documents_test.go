package manifest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSplitDocuments(t *testing.T) {
	t.Parallel()
	type doc struct {
		Text string
		Line int
	}
	cases := map[string]struct {
		in   string
		want []doc
	}{
		"one document without a trailing newline": {in: "a: 1", want: []doc{{"a: 1\n", 1}}},
		"leading separator and comments": {
			in:   "# header\n---\na: 1\n---\n# only a comment\n---\nb: 2\n",
			want: []doc{{"a: 1\n", 3}, {"b: 2\n", 7}},
		},
		"separator with a comment, end marker": {
			in:   "a: 1\n--- # next\nb: 2\n...\n",
			want: []doc{{"a: 1\n", 1}, {"b: 2\n", 3}},
		},
		"content on the separator line": {in: "--- {a: 1}\n", want: []doc{{"{a: 1}\n", 1}}},
		"a block scalar holding dashes is not split": {
			in:   "a: |\n  ---\n  x\n",
			want: []doc{{"a: |\n  ---\n  x\n", 1}},
		},
		"CRLF line ends": {in: "a: 1\r\n---\r\nb: 2\r\n", want: []doc{{"a: 1\r\n", 1}, {"b: 2\r\n", 3}}},
		"nothing":        {in: "\n# nothing\n", want: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var got []doc
			for _, c := range SplitDocuments([]byte(tc.in)) {
				got = append(got, doc{string(c.Text), c.Line})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SplitDocuments() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLineOf(t *testing.T) {
	t.Parallel()
	text := "# comment\napiVersion: v1\nspec:\n  requirements:\n  - key: a\n    operator: In\n  - key: b\n    operator: Gt\n  labels:\n    a/b: c\n"
	docs, err := parseChunk("in.yaml", 1, Chunk{Text: []byte(text), Line: 11})
	if err != nil {
		t.Fatal(err)
	}
	d := docs[0]
	cases := map[string]int{
		"":                              12, // the document's first content line
		"spec":                          13,
		"spec.requirements[1]":          17,
		"spec.requirements[1].operator": 18,
		"spec.labels[a/b]":              20,
		"spec.missing.deeper":           13,
		"spec.requirements[7]":          14,
	}
	for path, want := range cases {
		if got := d.lineOf(path); got != want {
			t.Errorf("lineOf(%q) = %d, want %d", path, got, want)
		}
	}
}
