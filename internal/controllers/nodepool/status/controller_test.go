package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func TestSumsMayMove(t *testing.T) {
	base := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Status:     v1.NodeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	cases := map[string]struct {
		mutate func(*v1.NodeClaim)
		want   bool
	}{
		"a condition written": {mutate: func(nc *v1.NodeClaim) {
			nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
		}},
		"the node name recorded": {mutate: func(nc *v1.NodeClaim) { nc.Status.NodeName = "node-a" }},
		"another label":          {mutate: func(nc *v1.NodeClaim) { nc.Labels["team"] = "web" }},
		"the same capacity again": {mutate: func(nc *v1.NodeClaim) {
			nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000m")}
		}},
		"the capacity grows":       {mutate: func(nc *v1.NodeClaim) { nc.Status.Capacity[corev1.ResourceMemory] = resource.MustParse("8Gi") }, want: true},
		"the claim starts to go":   {mutate: func(nc *v1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{} }, want: true},
		"the claim moves its pool": {mutate: func(nc *v1.NodeClaim) { nc.Labels[v1.NodePoolLabelKey] = "other" }, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.mutate(updated)
			if got := sumsMayMove(base, updated); got != tc.want {
				t.Errorf("sumsMayMove = %t, want %t", got, tc.want)
			}
		})
	}
}
