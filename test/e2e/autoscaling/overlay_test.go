package autoscaling_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestNodeOverlays: on the full control plane, a NodeOverlay halving the m5
// family's price flips the family of the next node launched from c5.xlarge
// (cheaper on EC2's prices) to m5.xlarge, and an overlay giving the c5
// family a fake extended resource gets a pod that requests it a node that
// advertises it, where the real kube-scheduler binds it and it runs.
func TestNodeOverlays(t *testing.T) {
	pool := localcluster.DefaultNodePool()
	pool.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.xlarge", "m5.xlarge"}},
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}},
	}
	// The c5 node must stay for the test's length: consolidation would
	// otherwise replace it once the m5 discount makes m5 cheaper.
	pool.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("1h")
	startDovetail(t, pool)
	ns := testEnv.Namespace(t)

	// 1. EC2's prices: c5.xlarge is the cheaper type that fits 3 cpu.
	create(t, workloads.Deployment(ns, "before", 1, "3", "1Gi"))
	expectInstanceType(t, waitRunning(t, ns, "before", 1, 2*time.Minute), "c5.xlarge")

	// 2. Halve the m5 family's price: the next node is an m5.xlarge.
	discount := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "m5-discount"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements:    []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}},
			PriceAdjustment: ptr.To("-50%"),
		},
	}
	removeAtEnd(t, discount)
	create(t, discount)
	waitOverlayReady(t, discount.Name)
	create(t, workloads.Deployment(ns, "after", 1, "3", "1Gi"))
	pods := waitRunning(t, ns, "after", 1, 2*time.Minute)
	expectInstanceType(t, pods, "m5.xlarge")
	claim := claimOf(t, pods[0].Spec.NodeName)
	if got := claim.Annotations[v1alpha1.PriceOverlayAppliedAnnotationKey]; got != "true" {
		t.Errorf("NodeClaim %s annotation %s=%q, want true", claim.Name, v1alpha1.PriceOverlayAppliedAnnotationKey, got)
	}

	// 3. A fake extended resource on the c5 family: a pod requesting it
	// gets a c5.xlarge that advertises it, and runs there.
	fpga := &v1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "fpga"},
		Spec: v1alpha1.NodeOverlaySpec{
			Requirements: []v1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"c5"}}},
			Capacity:     corev1.ResourceList{"example.com/fpga": resource.MustParse("1")},
		},
	}
	removeAtEnd(t, fpga)
	create(t, fpga)
	waitOverlayReady(t, fpga.Name)
	d := workloads.Deployment(ns, "fpga", 1, "500m", "512Mi")
	resources := &d.Spec.Template.Spec.Containers[0].Resources
	resources.Requests["example.com/fpga"] = resource.MustParse("1")
	resources.Limits = corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}
	create(t, d)
	pods = waitRunning(t, ns, "fpga", 1, 2*time.Minute)
	expectInstanceType(t, pods, "c5.xlarge")
	for name, node := range nodesOf(t, pods) {
		if q := node.Status.Allocatable["example.com/fpga"]; q.Value() != 1 {
			t.Errorf("node %s allocatable example.com/fpga %s, want 1", name, q.String())
		}
	}
}

// expectInstanceType fails the test unless every pod's node is of the type.
func expectInstanceType(t *testing.T, pods []corev1.Pod, want string) {
	t.Helper()
	for name, node := range nodesOf(t, pods) {
		if got := node.Labels[corev1.LabelInstanceTypeStable]; got != want {
			t.Errorf("node %s is a %s, want %s", name, got, want)
		}
	}
}

// waitOverlayReady waits until the nodeoverlay controller marks the
// overlay Ready for its current generation.
func waitOverlayReady(t *testing.T, name string) {
	t.Helper()
	env.Eventually(t, time.Minute, "NodeOverlay "+name+" Ready", func(ctx context.Context) (bool, error) {
		no := &v1alpha1.NodeOverlay{}
		if err := testEnv.Client.Get(ctx, client.ObjectKey{Name: name}, no); err != nil {
			return false, err
		}
		ready := meta.FindStatusCondition(no.Status.Conditions, v1alpha1.ConditionTypeReady)
		return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == no.Generation, nil
	})
}

// claimOf returns the NodeClaim of the node.
func claimOf(t *testing.T, nodeName string) v1.NodeClaim {
	t.Helper()
	// Registration frees the Node before the claim's status names it, so
	// a pod can run there a moment before the claim says so.
	var found v1.NodeClaim
	env.Eventually(t, 30*time.Second, "a NodeClaim for node "+nodeName, func(context.Context) (bool, error) {
		for _, nc := range nodeClaims(t) {
			if nc.Status.NodeName == nodeName {
				found = nc
				return true, nil
			}
		}
		return false, nil
	})
	return found
}
