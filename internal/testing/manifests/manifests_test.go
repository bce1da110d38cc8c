package manifests

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSubstitute(t *testing.T) {
	cases := map[string]struct {
		in      string
		vars    map[string]string
		want    string
		wantErr bool
	}{
		"fills named placeholders":   {in: "role: KarpenterNodeRole-${CLUSTER_NAME}", vars: map[string]string{"CLUSTER_NAME": "demo"}, want: "role: KarpenterNodeRole-demo"},
		"leaves shell variables":     {in: "echo $HOME $(date)", vars: nil, want: "echo $HOME $(date)"},
		"fails on unknown braces":    {in: "x: ${OTHER}", vars: map[string]string{"CLUSTER_NAME": "demo"}, wantErr: true},
		"fills repeated placeholder": {in: "${A}-${A}", vars: map[string]string{"A": "x"}, want: "x-x"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Substitute([]byte(tc.in), tc.vars)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Substitute() error = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, string(got)); diff != "" {
					t.Errorf("Substitute() mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestDecode(t *testing.T) {
	cases := map[string]struct {
		in        string
		wantKinds []string
		wantErr   bool
	}{
		"multi-document with comments and empty documents": {
			in:        "# comment\n---\napiVersion: v1\nkind: A\n---\n---\napiVersion: v1\nkind: B\n",
			wantKinds: []string{"A", "B"},
		},
		"not yaml": {in: "kind: [unclosed", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs, err := Decode([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Decode() error = %v, wantErr %v", err, tc.wantErr)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if diff := cmp.Diff(tc.wantKinds, kinds); diff != "" {
				t.Errorf("kinds mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
