package nodepoolutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func pool(name string, weight *int32) *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Weight: weight, Template: v1.NodeClaimTemplate{
		ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"a": "1", "b": "2"}},
		Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpExists}},
			ExpireAfter:  v1.MustParseNillableDuration("720h"),
		},
	}}}
}

func TestTemplateHash(t *testing.T) {
	base := TemplateHash(pool("a", nil))
	cases := map[string]struct {
		mutate    func(*v1.NodePool)
		wantDrift bool
	}{
		"another name and weight": {mutate: func(np *v1.NodePool) { np.Name = "other"; np.Spec.Weight = ptr.To[int32](5) }},
		"requirements changed":    {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = nil }},
		"disruption changed":      {mutate: func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty }},
		"label added":             {mutate: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["c"] = "3" }, wantDrift: true},
		"taint added": {mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}
		}, wantDrift: true},
		"node class changed":  {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, wantDrift: true},
		"expireAfter changed": {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h") }, wantDrift: true},
		"grace period set":    {mutate: func(np *v1.NodePool) { d := v1.NewDuration(3600e9); np.Spec.Template.Spec.TerminationGracePeriod = &d }, wantDrift: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := pool("a", nil)
			tc.mutate(np)
			if drift := TemplateHash(np) != base; drift != tc.wantDrift {
				t.Errorf("hash changed = %v, want %v", drift, tc.wantDrift)
			}
		})
	}
}

func TestSortByWeight(t *testing.T) {
	pools := []*v1.NodePool{pool("b", nil), pool("a", nil), pool("heavy", ptr.To[int32](50)), pool("c", ptr.To[int32](10))}
	SortByWeight(pools)
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"heavy", "c", "a", "b"}, names); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}
