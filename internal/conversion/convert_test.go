package conversion

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestConvertJSON(t *testing.T) {
	t.Parallel()
	v1beta1NodePool := `{"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"default"},` +
		`"spec":{"disruption":{"consolidationPolicy":"WhenEmpty","consolidateAfter":"30s","expireAfter":"720h"},` +
		`"template":{"spec":{"nodeClassRef":{"name":"default"},"requirements":[]}}}}`
	cases := map[string]struct {
		object     string
		apiVersion string
		want       string
		wantErr    string
	}{
		"v1beta1 NodePool to v1": {
			object:     v1beta1NodePool,
			apiVersion: "karpenter.sh/v1",
			want: `{"kind":"NodePool","apiVersion":"karpenter.sh/v1","metadata":{"name":"default",` +
				`"annotations":{"compatibility.karpenter.sh/v1beta1-nodeclass-reference":"{\"name\":\"default\"}"}},` +
				`"spec":{"template":{"metadata":{},"spec":{"requirements":[],"nodeClassRef":{"kind":"EC2NodeClass","name":"default","group":"karpenter.k8s.aws"},"expireAfter":"720h"}},` +
				`"disruption":{"consolidateAfter":"30s","consolidationPolicy":"WhenEmpty"}},"status":{}}`,
		},
		"an object already at the target version comes back unchanged": {
			object:     v1beta1NodePool,
			apiVersion: "karpenter.sh/v1beta1",
			want:       v1beta1NodePool,
		},
		"EC2NodeClass to v1": {
			object: `{"apiVersion":"karpenter.k8s.aws/v1beta1","kind":"EC2NodeClass","metadata":{"name":"al2"},` +
				`"spec":{"amiFamily":"AL2","role":"r","subnetSelectorTerms":[{"id":"subnet-1"}],"securityGroupSelectorTerms":[{"id":"sg-1"}]}}`,
			apiVersion: "karpenter.k8s.aws/v1",
			want: `{"kind":"EC2NodeClass","apiVersion":"karpenter.k8s.aws/v1","metadata":{"name":"al2"},` +
				`"spec":{"subnetSelectorTerms":[{"id":"subnet-1"}],"securityGroupSelectorTerms":[{"id":"sg-1"}],"amiSelectorTerms":[{"alias":"al2@latest"}],"role":"r"},"status":{}}`,
		},
		"an unknown field is an error, not a silent loss": {
			object:     `{"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"x"},"spec":{"weigth":3}}`,
			apiVersion: "karpenter.sh/v1",
			wantErr:    `decoding NodePool: unknown field "spec.weigth"`,
		},
		"a kind this package does not convert": {
			object:     `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"}}`,
			apiVersion: "v1beta1",
			wantErr:    `cannot convert /v1, Kind=Pod: not a NodePool, NodeClaim or EC2NodeClass of a served version`,
		},
		"a version that is not served": {
			object:     v1beta1NodePool,
			apiVersion: "karpenter.sh/v1alpha5",
			wantErr:    `cannot convert karpenter.sh/v1beta1 NodePool to karpenter.sh/v1alpha5: served versions are karpenter.sh/v1beta1 and karpenter.sh/v1`,
		},
		"not JSON": {
			object:     `apiVersion: v1`,
			apiVersion: "karpenter.sh/v1",
			wantErr:    `reading apiVersion and kind: invalid character 'a' looking for beginning of value`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Converter{}).ConvertJSON(context.Background(), []byte(tc.object), tc.apiVersion)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(decodeJSON(t, tc.want), decodeJSON(t, string(got))); diff != "" {
				t.Errorf("ConvertJSON() (-want +got):\n%s", diff)
			}
		})
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return m
}

func TestConvertTyped(t *testing.T) {
	t.Parallel()
	in := v1Pool(nil)
	cases := map[string]struct {
		apiVersion string
		want       runtime.Object
		wantErr    string
	}{
		"to the spoke":                   {apiVersion: "karpenter.sh/v1beta1", want: v1beta1Pool(nil)},
		"to its own version, a copy":     {apiVersion: "karpenter.sh/v1", want: v1Pool(nil)},
		"to another group's version":     {apiVersion: "karpenter.k8s.aws/v1", wantErr: "cannot convert karpenter.sh/v1 NodePool to karpenter.k8s.aws/v1: served versions are karpenter.sh/v1 and karpenter.sh/v1beta1"},
		"an apiVersion that won't parse": {apiVersion: "a/b/c", wantErr: `parsing target apiVersion: unexpected GroupVersion string: a/b/c`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Converter{}).Convert(context.Background(), in, tc.apiVersion)
			checkErr(t, err, tc.wantErr)
			if tc.wantErr != "" {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("Convert() (-want +got):\n%s", diff)
			}
			if got == runtime.Object(in) {
				t.Errorf("Convert() returned its input, want a copy")
			}
		})
	}
}
