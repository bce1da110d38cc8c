package disruption_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
)

func TestEvictionCost(t *testing.T) {
	prio := func(n int32) *corev1.Pod {
		p := pod("p", "web", "1")
		p.Spec.Priority = &n
		return p
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want float64
	}{
		"plain pod":                {pod: pod("p", "web", "1"), want: 1},
		"deletion cost":            {pod: annotate(pod("p", "web", "1"), "controller.kubernetes.io/pod-deletion-cost", "134217728"), want: 2},
		"negative deletion cost":   {pod: annotate(pod("p", "web", "1"), "controller.kubernetes.io/pod-deletion-cost", "-134217728"), want: 0},
		"unparsable deletion cost": {pod: annotate(pod("p", "web", "1"), "controller.kubernetes.io/pod-deletion-cost", "lots"), want: 1},
		"priority":                 {pod: prio(1 << 25), want: 2},
		"clamped high":             {pod: prio(2_000_000_000), want: 10},
		"clamped low":              {pod: prio(-2_000_000_000), want: -10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := disruption.EvictionCost(tc.pod); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLifetimeRemaining(t *testing.T) {
	np := makePool("default").obj()
	cases := map[string]struct {
		expireAfter string
		want        float64
	}{
		"never expires":      {expireAfter: v1.Never, want: 1},
		"half its lifetime":  {expireAfter: "4h", want: 0.5},
		"past its lifetime":  {expireAfter: "1h", want: 0},
		"most of it is left": {expireAfter: "8h", want: 0.75},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := makeNode("a", np, catalog()[0], zoneA, v1.CapacityTypeOnDemand).expireAfter(tc.expireAfter).obj().NodeClaim
			if got := disruption.LifetimeRemaining(nc, now); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCandidateOrder: the biggest saving per unit of disruption cost goes
// first: pricier nodes, fewer pods, pods of lower priority and deletion
// cost, nodes closer to expiry.
func TestCandidateOrder(t *testing.T) {
	np := makePool("default").obj()
	small, large := catalog()[0], catalog()[2]
	highPriority := pod("hp", "web", "100m")
	prio := int32(1 << 27)
	highPriority.Spec.Priority = &prio
	nodes := []*nodeWrapper{
		makeNode("small-1-pod", np, small, zoneA, v1.CapacityTypeOnDemand).pods(pod("a1", "web", "100m")),
		makeNode("large-1-pod", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("b1", "web", "100m")),
		makeNode("large-3-pods", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("c1", "web", "100m"), pod("c2", "web", "100m"), pod("c3", "web", "100m")),
		makeNode("large-priority-pod", np, large, zoneA, v1.CapacityTypeOnDemand).pods(highPriority),
		makeNode("large-1-pod-expiring", np, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("d1", "web", "100m")).expireAfter("3h"),
		makeNode("large-cheap-pod", np, large, zoneA, v1.CapacityTypeOnDemand).pods(annotate(pod("e1", "web", "100m"), "controller.kubernetes.io/pod-deletion-cost", "-999999999")),
	}
	in := input([]*v1.NodePool{np})
	for _, n := range nodes {
		in.Nodes = append(in.Nodes, n.obj())
	}
	var got []string
	for _, c := range disruption.Candidates(in, disruption.Options{}) {
		got = append(got, c.Name())
	}
	want := []string{"large-1-pod-expiring", "large-cheap-pod", "large-1-pod", "large-3-pods", "large-priority-pod", "small-1-pod"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestConsolidatableAt(t *testing.T) {
	np := makePool("default").consolidateAfter("30s").obj()
	initialized := now.Add(-time.Hour)
	cases := map[string]struct {
		pool      *v1.NodePool
		lastEvent time.Duration // ago; 0 = none
		notInit   bool
		wantAt    time.Time
		wantOK    bool
		wantNow   bool
	}{
		"from initialization":     {pool: np, wantAt: initialized.Add(30 * time.Second), wantOK: true, wantNow: true},
		"from the last pod event": {pool: np, lastEvent: 10 * time.Second, wantAt: now.Add(20 * time.Second), wantOK: true},
		"a pod event long ago":    {pool: np, lastEvent: time.Minute, wantAt: now.Add(-30 * time.Second), wantOK: true, wantNow: true},
		"never":                   {pool: makePool("default").consolidateAfter(v1.Never).obj()},
		"not initialized":         {pool: np, notInit: true},
		"zero consolidateAfter":   {pool: makePool("default").consolidateAfter("0s").obj(), lastEvent: time.Second, wantAt: now.Add(-time.Second), wantOK: true, wantNow: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := makeNode("a", tc.pool, catalog()[0], zoneA, v1.CapacityTypeOnDemand)
			if tc.lastEvent > 0 {
				w.lastPodEvent(tc.lastEvent)
			}
			if tc.notInit {
				w.notInitialized()
			}
			at, ok := disruption.ConsolidatableAt(w.obj().NodeClaim, tc.pool)
			if !at.Equal(tc.wantAt) || ok != tc.wantOK {
				t.Errorf("ConsolidatableAt = %v, %v; want %v, %v", at, ok, tc.wantAt, tc.wantOK)
			}
			if got := disruption.IsConsolidatable(w.obj().NodeClaim, tc.pool, now); got != tc.wantNow {
				t.Errorf("IsConsolidatable = %v, want %v", got, tc.wantNow)
			}
		})
	}
}

func TestStaticDrift(t *testing.T) {
	np := makePool("default").req("karpenter.k8s.aws/instance-category", corev1.NodeSelectorOpIn, "c", "m").obj()
	claim := func(mutate func(nc *v1.NodeClaim)) *v1.NodeClaim {
		nc := makeNode("a", np, catalog()[0], zoneA, v1.CapacityTypeOnDemand).obj().NodeClaim
		nc.Labels["karpenter.k8s.aws/instance-category"] = "m"
		if mutate != nil {
			mutate(nc)
		}
		return nc
	}
	relabelled := np.DeepCopy()
	relabelled.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "b"}
	narrowed := np.DeepCopy()
	narrowed.Spec.Template.Spec.Requirements[0].Values = []string{"c"}
	widened := np.DeepCopy()
	widened.Spec.Template.Spec.Requirements[0].Values = []string{"c", "m", "r"}
	teamReq := np.DeepCopy()
	teamReq.Spec.Template.Spec.Requirements = append(teamReq.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}})
	notTeamB := np.DeepCopy()
	notTeamB.Spec.Template.Spec.Requirements = append(notTeamB.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: "team", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"b"}})
	cases := map[string]struct {
		nc         *v1.NodeClaim
		pool       *v1.NodePool
		wantReason string
	}{
		"unchanged":               {nc: claim(nil), pool: np},
		"template labels changed": {nc: claim(nil), pool: relabelled, wantReason: disruption.DriftReasonNodePool},
		"other hash version is not compared": {nc: claim(func(nc *v1.NodeClaim) {
			nc.Annotations[v1.NodePoolHashVersionAnnotationKey] = "old"
		}), pool: relabelled},
		"claim without hash is not compared":       {nc: claim(func(nc *v1.NodeClaim) { nc.Annotations = nil }), pool: relabelled},
		"requirement narrowed away from the label": {nc: claim(nil), pool: narrowed, wantReason: disruption.DriftReasonRequirements},
		"requirement widened":                      {nc: claim(nil), pool: widened},
		"new requirement on a missing label":       {nc: claim(nil), pool: teamReq, wantReason: disruption.DriftReasonRequirements},
		"new NotIn requirement on a missing label": {nc: claim(nil), pool: notTeamB},
		"multi-value requirement without a label still overlapping": {nc: claim(func(nc *v1.NodeClaim) {
			nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}
		}), pool: teamReq},
		"multi-value requirement without a label no longer overlapping": {nc: claim(func(nc *v1.NodeClaim) {
			nc.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "d"}}}
		}), pool: teamReq, wantReason: disruption.DriftReasonRequirements},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.nc.Annotations != nil && tc.nc.Annotations[v1.NodePoolHashVersionAnnotationKey] == nodepoolutil.HashVersion {
				tc.nc.Annotations[v1.NodePoolHashAnnotationKey] = nodepoolutil.TemplateHash(np)
			}
			reason, msg := disruption.StaticDrift(tc.nc, tc.pool)
			if reason != tc.wantReason {
				t.Errorf("reason = %q (%s), want %q", reason, msg, tc.wantReason)
			}
			if (msg == "") != (reason == "") {
				t.Errorf("message %q does not go with reason %q", msg, reason)
			}
		})
	}
}
