package manifest

import (
	"strings"
	"testing"
)

// TestDowngrade converts v1 manifests to v1beta1: a NodeClaim whose
// expireAfter follows its NodePool (found in the same input) needs no
// annotation; v1-only settings are kept in the v1-fields annotation with a
// warning; documents already at v1beta1 pass through unchanged.
func TestDowngrade(t *testing.T) {
	t.Parallel()
	pool := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: np\nspec:\n  template:\n    spec:\n      expireAfter: 24h\n" +
		"      terminationGracePeriod: 1h\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements: []\n"
	claim := "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata:\n  name: np-1\n  labels: {karpenter.sh/nodepool: np}\nspec:\n  expireAfter: 24h\n" +
		"  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n  requirements: []\n"
	already := "apiVersion: karpenter.sh/v1beta1\nkind: NodePool\nmetadata:\n  name: old # a comment that survives\nspec:\n  template:\n    spec:\n" +
		"      nodeClassRef: {name: default}\n      requirements: []\n"
	got, err := convert(t, Options{To: TargetV1beta1}, Input{Source: "in.yaml", Data: []byte(pool + "---\n" + claim + "---\n" + already)})
	if err != nil {
		t.Fatalf("ConvertAll() error: %v", err)
	}
	docs := strings.Split(string(got.Output), "---\n")
	if len(docs) != 3 || got.Converted != 2 || got.PassedThrough != 1 {
		t.Fatalf("got %d documents (%d converted, %d passed through):\n%s", len(docs), got.Converted, got.PassedThrough, got.Output)
	}
	if !strings.Contains(docs[0], `compatibility.karpenter.sh/v1-fields: '{"terminationGracePeriod":"1h"}'`) || !strings.Contains(docs[0], "expireAfter: 24h\n") {
		t.Errorf("NodePool:\n%s", docs[0])
	}
	if strings.Contains(docs[1], "compatibility") || !strings.Contains(docs[1], "apiVersion: karpenter.sh/v1beta1") {
		t.Errorf("NodeClaim, which follows its NodePool, should need no annotation:\n%s", docs[1])
	}
	if docs[2] != already {
		t.Errorf("the v1beta1 NodePool changed:\n%s", docs[2])
	}
	if !strings.Contains(strings.Join(got.Warnings, "\n"), `NodePool "np": v1 settings without a v1beta1 field are kept in annotation compatibility.karpenter.sh/v1-fields`) {
		t.Errorf("warnings %q", got.Warnings)
	}
}
