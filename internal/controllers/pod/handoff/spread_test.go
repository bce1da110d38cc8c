package handoff

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestSpreadAdmits: the kube-scheduler's spread filter as its first pass
// runs it, with the pods nominated to the node counted there. Two pods of
// a group nominated together to a node in a balanced cluster keep each
// other off it; that is what left 199 of 1,000 pods pending in CI.
func TestSpreadAdmits(t *testing.T) {
	node := func(name, zone string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
		if zone != "" {
			n.Labels[corev1.LabelTopologyZone] = zone
		}
		return n
	}
	web := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web", "pod-template-hash": "v1"}}}
	}
	other := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "api"}}}
	}
	spread := func(mutate ...func(*corev1.TopologySpreadConstraint)) *corev1.Pod {
		p := web("p")
		c := corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
		for _, m := range mutate {
			m(&c)
		}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{c}
		return p
	}
	nodes := []corev1.Node{node("a1", "a"), node("b1", "b"), node("c1", "c")}
	// teamNodes are nodes, of which only a1 and b1 are team=web's; forTeam
	// makes a pod select them.
	teamNodes := func() []corev1.Node {
		ns := []corev1.Node{node("a1", "a"), node("b1", "b"), node("c1", "c")}
		ns[0].Labels["team"], ns[1].Labels["team"] = "web", "web"
		return ns
	}
	forTeam := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeSelector = map[string]string{"team": "web"}
		return p
	}
	bound := func(perNode map[string][]*corev1.Pod) map[string][]*corev1.Pod { return perNode }
	balanced := bound(map[string][]*corev1.Pod{"a1": {web("w1")}, "b1": {web("w2")}, "c1": {web("w3")}})
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		nodes     []corev1.Node
		bound     map[string][]*corev1.Pod
		nominated []*corev1.Pod
		on        string
		want      bool
		why       string
	}{
		{name: "balanced, nothing nominated", pod: spread(), nodes: nodes, bound: balanced, on: "a1", want: true},
		{name: "balanced, one of the group nominated there", pod: spread(), nodes: nodes, bound: balanced,
			nominated: []*corev1.Pod{web("n1")}, on: "a1", want: false, why: "would hold 3 matching pods"},
		{name: "its zone the emptiest, one nominated there", pod: spread(), nodes: nodes,
			bound: bound(map[string][]*corev1.Pod{"b1": {web("w2")}, "c1": {web("w3")}}), nominated: []*corev1.Pod{web("n1")}, on: "a1", want: true},
		{name: "other pods nominated there do not count", pod: spread(), nodes: nodes, bound: balanced,
			nominated: []*corev1.Pod{other("n1"), other("n2")}, on: "a1", want: true},
		{name: "other pods bound do not count", pod: spread(), nodes: nodes,
			bound: bound(map[string][]*corev1.Pod{"a1": {other("o1"), other("o2")}}), on: "a1", want: true},
		{name: "a node without the zone label", pod: spread(), nodes: append(nodes, node("x", "")), bound: balanced, on: "x", want: false, why: "no topology.kubernetes.io/zone label"},
		{name: "minDomains above the domains there are", pod: spread(func(c *corev1.TopologySpreadConstraint) { c.MinDomains = ptr.To[int32](4) }),
			nodes: nodes, bound: balanced, on: "a1", want: false},
		{name: "a zone the pod may not use is not the least", pod: forTeam(spread()), nodes: teamNodes(), bound: bound(map[string][]*corev1.Pod{"a1": {web("w1")}, "b1": {web("w2")}}), on: "a1", want: true},
		{name: "nodeAffinityPolicy Ignore counts that zone", pod: forTeam(spread(func(c *corev1.TopologySpreadConstraint) {
			c.NodeAffinityPolicy = ptr.To(corev1.NodeInclusionPolicyIgnore)
		})), nodes: teamNodes(), bound: bound(map[string][]*corev1.Pod{"a1": {web("w1")}, "b1": {web("w2")}}), on: "a1", want: false},
		{name: "matchLabelKeys: another revision's pods do not count", pod: spread(func(c *corev1.TopologySpreadConstraint) { c.MatchLabelKeys = []string{"pod-template-hash"} }),
			nodes: nodes, bound: bound(map[string][]*corev1.Pod{"a1": {web("w1")}, "b1": {func() *corev1.Pod {
				p := web("old")
				p.Labels["pod-template-hash"] = "v0"
				return p
			}()}}), on: "b1", want: true},
		{name: "ScheduleAnyway is not a filter", pod: spread(func(c *corev1.TopologySpreadConstraint) { c.WhenUnsatisfiable = corev1.ScheduleAnyway }),
			nodes: nodes, bound: balanced, nominated: []*corev1.Pod{web("n1"), web("n2")}, on: "a1", want: true},
		{name: "a node without another constraint's key is not counted", pod: func() *corev1.Pod {
			p := spread()
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 10, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}})
			return p
		}(), nodes: func() []corev1.Node {
			ns := []corev1.Node{node("a1", "a"), node("b1", "b"), node("b2", "b")}
			ns[0].Labels["rack"], ns[1].Labels["rack"] = "r1", "r2"
			return ns
		}(), bound: bound(map[string][]*corev1.Pod{"a1": {web("w1")}, "b2": {web("w2"), web("w3")}}), on: "a1", want: false},
		{name: "an empty selector counts no bound pod", pod: spread(func(c *corev1.TopologySpreadConstraint) { c.LabelSelector = &metav1.LabelSelector{} }),
			nodes: []corev1.Node{node("a1", "a"), node("b1", "b")}, bound: bound(map[string][]*corev1.Pod{"b1": {web("w1"), web("w2"), other("o1"), other("o2"), other("o3")}}),
			nominated: []*corev1.Pod{web("n1"), other("n2")}, on: "a1", want: false},
		{name: "maxSkew 2 takes one more", pod: spread(func(c *corev1.TopologySpreadConstraint) { c.MaxSkew = 2 }), nodes: nodes, bound: balanced,
			nominated: []*corev1.Pod{web("n1")}, on: "a1", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var target *corev1.Node
			for i := range tc.nodes {
				if tc.nodes[i].Name == tc.on {
					target = &tc.nodes[i]
				}
			}
			v := &spreadView{nodes: tc.nodes, bound: tc.bound, nominated: tc.nominated}
			got, why := v.admits(context.Background(), tc.pod, target)
			if got != tc.want {
				t.Errorf("admits = %v (%s), want %v", got, why, tc.want)
			}
			if !strings.Contains(why, tc.why) {
				t.Errorf("why %q does not contain %q", why, tc.why)
			}
		})
	}
}
