package manifest

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func v1beta1PoolYAML(name, class, kubelet string) string {
	doc := "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {apiVersion: karpenter.k8s.aws/v1beta1, kind: EC2NodeClass, name: " + class + "}\n      requirements: []\n"
	if kubelet != "" {
		doc += "      kubelet: " + kubelet + "\n"
	}
	return doc
}

func v1beta1ClassYAML(name string) string {
	return "apiVersion: karpenter.k8s.aws/v1beta1\nkind: EC2NodeClass\nmetadata:\n  name: " + name + "\nspec:\n  amiFamily: AL2023\n  role: r\n" +
		"  metadataOptions: {httpPutResponseHopLimit: 1}\n  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"
}

const v1ClassYAML = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: shared\nspec:\n  amiSelectorTerms: [{alias: al2023@latest}]\n  role: r\n" +
	"  subnetSelectorTerms: [{id: subnet-1}]\n  securityGroupSelectorTerms: [{id: sg-1}]\n"

// TestKubeletMove: v1 keeps kubelet settings on the EC2NodeClass, so a v1beta1
// NodePool's settings move there when every NodePool of the class agrees and
// the class is converted in the same run; otherwise they stay in the
// NodePool's annotation, which still takes effect, and a warning says why.
func TestKubeletMove(t *testing.T) {
	t.Parallel()
	const annotation = "compatibility.karpenter.sh/v1beta1-kubelet-conversion"
	cases := map[string]struct {
		inputs         []string
		wantKubelet    map[string]any // EC2NodeClass "shared" spec.kubelet
		wantAnnotation []string       // NodePools that keep the annotation
		wantWarning    string
	}{
		"one NodePool: moved": {
			inputs:      []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}"), v1beta1ClassYAML("shared")},
			wantKubelet: map[string]any{"maxPods": float64(50)},
			wantWarning: `NodePool "a": kubelet settings moved to EC2NodeClass "shared"`,
		},
		"NodePools that agree, class in another input: moved": {
			inputs:      []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}") + "---\n" + v1beta1PoolYAML("b", "shared", "{maxPods: 50}"), v1beta1ClassYAML("shared")},
			wantKubelet: map[string]any{"maxPods": float64(50)},
		},
		"NodePools that differ: kept": {
			inputs:         []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}"), v1beta1PoolYAML("b", "shared", "{maxPods: 60}"), v1beta1ClassYAML("shared")},
			wantAnnotation: []string{"a", "b"},
			wantWarning:    `the NodePools of EC2NodeClass "shared" differ in kubelet settings`,
		},
		"a NodePool without kubelet shares the class: kept": {
			inputs:         []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}"), v1beta1PoolYAML("b", "shared", ""), v1beta1ClassYAML("shared")},
			wantAnnotation: []string{"a"},
			wantWarning:    `the NodePools of EC2NodeClass "shared" differ in kubelet settings`,
		},
		"class not in the input: kept": {
			inputs:         []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}")},
			wantAnnotation: []string{"a"},
			wantWarning:    `EC2NodeClass "shared" is not converted in this input`,
		},
		"class already v1, passed through: kept": {
			inputs:         []string{v1beta1PoolYAML("a", "shared", "{maxPods: 50}"), v1ClassYAML},
			wantAnnotation: []string{"a"},
			wantWarning:    `EC2NodeClass "shared" is not converted in this input`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var inputs []Input
			for i, in := range tc.inputs {
				inputs = append(inputs, Input{Source: "in" + itoa(i) + ".yaml", Data: []byte(in)})
			}
			got, err := convert(t, Options{}, inputs...)
			if err != nil {
				t.Fatalf("ConvertAll() error: %v", err)
			}
			var kubelet map[string]any
			var kept []string
			for _, doc := range splitYAML(t, got.Output) {
				meta := doc["metadata"].(map[string]any)
				spec := doc["spec"].(map[string]any)
				switch doc["kind"] {
				case "EC2NodeClass":
					kubelet, _ = spec["kubelet"].(map[string]any)
				case "NodePool":
					if annotations, ok := meta["annotations"].(map[string]any); ok && annotations[annotation] != nil {
						kept = append(kept, meta["name"].(string))
					}
				}
			}
			if diff := cmp.Diff(tc.wantKubelet, kubelet, cmpOpts()...); diff != "" {
				t.Errorf("EC2NodeClass kubelet (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantAnnotation, kept, cmpOpts()...); diff != "" {
				t.Errorf("NodePools keeping the annotation (-want +got):\n%s", diff)
			}
			if tc.wantWarning != "" && !strings.Contains(strings.Join(got.Warnings, "\n"), tc.wantWarning) {
				t.Errorf("warnings %q lack %q", got.Warnings, tc.wantWarning)
			}
		})
	}
}
