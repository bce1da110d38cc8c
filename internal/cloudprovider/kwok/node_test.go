package kwok

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// testClaim is a claim of NodePool "default" with a taint, a startup taint
// and a NodePool requirement on a custom label.
func testClaim() *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abcde", Labels: map[string]string{v1.NodePoolLabelKey: "default", "team": "a"}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			NodeClassRef:  &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements:  []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large"), in("tier", "web")},
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoExecute}, v1.UnregisteredNoExecuteTaint()},
		}},
	}
}

// m5Spot returns the m5.large spot offering in us-east-1c.
func m5Spot(t *testing.T, c *CloudProvider) candidate {
	t.Helper()
	it := c.byName["m5.large"]
	for _, o := range it.Offerings {
		if o.Zone == "us-east-1c" && o.CapacityType == v1.CapacityTypeSpot {
			return candidate{instanceType: it, offering: o}
		}
	}
	t.Fatal("m5.large has no spot offering in us-east-1c")
	return candidate{}
}

func TestNewNode(t *testing.T) {
	c, _ := newTestProvider(t, Options{})
	claim := testClaim()
	node := newNode(claim, parse(t, claim.Spec.Requirements), m5Spot(t, c), "p1")
	wantLabels := map[string]string{
		"team": "a", "tier": "web", v1.NodePoolLabelKey: "default",
		corev1.LabelHostname: "default-abcde", PartitionLabelKey: "p1",
		corev1.LabelTopologyZone: "us-east-1c", v1.CapacityTypeLabelKey: v1.CapacityTypeSpot,
		corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		// What the kubelet writes too (the node lifecycle controller would).
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		corev1.LabelTopologyRegion:                                   "us-east-1",
		"karpenter.k8s.aws/instance-category":                        "m",
		"karpenter.k8s.aws/instance-family":                          "m5",
		"karpenter.k8s.aws/instance-generation":                      "5",
		"karpenter.k8s.aws/instance-size":                            "large",
		"karpenter.k8s.aws/instance-cpu":                             "2",
		"karpenter.k8s.aws/instance-memory":                          "8192",
		"karpenter.k8s.aws/instance-hypervisor":                      "nitro",
		"karpenter.k8s.aws/instance-cpu-manufacturer":                "intel",
		"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz":   "3100",
		"karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
		"karpenter.k8s.aws/instance-capability-flex":                 "false",
		"karpenter.k8s.aws/instance-network-bandwidth":               "750",
		"karpenter.k8s.aws/instance-ebs-bandwidth":                   "4750",
		"karpenter.k8s.aws/instance-tenancy":                         "default",
	}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{NodeClassAnnotationKey: "default", KwokNodeAnnotationKey: KwokNodeAnnotationValue}
	if diff := cmp.Diff(wantAnnotations, node.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	wantTaints := []corev1.Taint{
		v1.UnregisteredNoExecuteTaint(),
		{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule},
		{Key: "cni", Effect: corev1.TaintEffectNoExecute},
	}
	if diff := cmp.Diff(wantTaints, node.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	before := testClaim()
	if diff := cmp.Diff([]any{before.Labels, before.Spec.Taints, before.Spec.StartupTaints}, []any{claim.Labels, claim.Spec.Taints, claim.Spec.StartupTaints}); diff != "" {
		t.Errorf("newNode changed the claim (-before +after):\n%s", diff)
	}
	got := map[string]string{
		"name": node.Name, "providerID": node.Spec.ProviderID,
		"cpu": node.Status.Capacity.Cpu().String(), "memory": node.Status.Capacity.Memory().String(),
		"allocatable cpu": node.Status.Allocatable.Cpu().String(), "allocatable memory": node.Status.Allocatable.Memory().String(),
		"pods": node.Status.Allocatable.Pods().String(), "arch": node.Status.NodeInfo.Architecture,
	}
	want := map[string]string{
		"name": "default-abcde", "providerID": "kwok://default-abcde",
		"cpu": "2", "memory": "7577Mi", "allocatable cpu": "1930m", "allocatable memory": "6903Mi",
		"pods": "29", "arch": "amd64",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("node (-want +got):\n%s", diff)
	}
	if len(node.OwnerReferences) != 0 {
		t.Errorf("node of an unsaved claim has owners %v", node.OwnerReferences)
	}

	claim.UID = "uid-1"
	owned := newNode(claim, parse(t, claim.Spec.Requirements), m5Spot(t, c), "p1")
	wantOwners := []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "default-abcde", UID: "uid-1"}}
	if diff := cmp.Diff(wantOwners, owned.OwnerReferences); diff != "" {
		t.Errorf("owners of the node of a stored claim (-want +got):\n%s", diff)
	}
}

func TestRegisterAfterRoundTrip(t *testing.T) {
	at := epoch().Add(1500 * time.Millisecond)
	value := formatRegisterAfter(at)
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		t.Fatalf("%q is not a label value: %v", value, msgs)
	}
	got, err := parseRegisterAfter(value)
	if err != nil || !got.Equal(at) {
		t.Errorf("parseRegisterAfter(%q) = %v, %v; want %v", value, got, err, at)
	}
	if _, err := parseRegisterAfter("soon"); err == nil {
		t.Error("parseRegisterAfter accepted a non-number")
	}
}

func TestFillClaimAndToNodeClaim(t *testing.T) {
	c, _ := newTestProvider(t, Options{})
	claim := testClaim()
	node := newNode(claim, parse(t, claim.Spec.Requirements), m5Spot(t, c), "p1")

	filled := fillClaim(claim, node)
	for key, want := range map[string]string{
		corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1c", v1.CapacityTypeLabelKey: "spot",
		"karpenter.k8s.aws/instance-family": "m5", v1.NodePoolLabelKey: "default", "team": "a",
	} {
		if got := filled.Labels[key]; got != want {
			t.Errorf("filled claim label %s = %q, want %q", key, got, want)
		}
	}
	for _, key := range []string{corev1.LabelHostname, "beta.kubernetes.io/arch", "beta.kubernetes.io/os"} {
		if _, ok := filled.Labels[key]; ok {
			t.Errorf("filled claim has the node's %s label", key)
		}
	}
	if got := filled.Labels[PartitionLabelKey]; got != "p1" {
		t.Errorf("filled claim partition = %q, want p1", got)
	}
	if filled.Status.ProviderID != "kwok://default-abcde" || filled.Status.Allocatable.Memory().String() != "6903Mi" {
		t.Errorf("filled claim status = %+v", filled.Status)
	}
	if claim.Status.ProviderID != "" || claim.Labels[corev1.LabelInstanceTypeStable] != "" {
		t.Error("fillClaim changed its input")
	}

	listed := toNodeClaim(node)
	wantReqs := []v1.NodeSelectorRequirementWithMinValues{
		in(corev1.LabelInstanceTypeStable, "m5.large"), in(corev1.LabelTopologyZone, "us-east-1c"), in(v1.CapacityTypeLabelKey, "spot"),
	}
	if diff := cmp.Diff(wantReqs, listed.Spec.Requirements); diff != "" {
		t.Errorf("listed claim requirements (-want +got):\n%s", diff)
	}
	wantRef := &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	if diff := cmp.Diff(wantRef, listed.Spec.NodeClassRef); diff != "" {
		t.Errorf("listed claim nodeClassRef (-want +got):\n%s", diff)
	}
	if listed.Name != node.Name || listed.Status.ProviderID != node.Spec.ProviderID || listed.Status.NodeName != node.Name {
		t.Errorf("listed claim = %s %+v", listed.Name, listed.Status)
	}
}
