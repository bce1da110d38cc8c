package health

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// readyPolicies are the kwok and AWS shape: Ready False or Unknown.
func readyPolicies(toleration time.Duration) []cloudprovider.RepairPolicy {
	return []cloudprovider.RepairPolicy{
		{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionFalse, TolerationDuration: toleration},
		{ConditionType: string(corev1.NodeReady), ConditionStatus: metav1.ConditionUnknown, TolerationDuration: toleration},
	}
}

// node has the conditions, each given as type, status and how long before
// epoch it last changed.
func node(name string, conds ...any) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := 0; i+2 < len(conds); i += 3 {
		n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
			Type: corev1.NodeConditionType(conds[i].(string)), Status: corev1.ConditionStatus(conds[i+1].(string)),
			LastTransitionTime: metav1.NewTime(epoch.Add(-conds[i+2].(time.Duration))),
		})
	}
	return n
}

func healthy(name string) *corev1.Node { return node(name, "Ready", "True", time.Hour) }

// pool is the subject followed by healthy nodes and unhealthy ones (Ready
// Unknown for an hour) up to total.
func pool(subject *corev1.Node, total, unhealthy int) []*corev1.Node {
	out := []*corev1.Node{subject}
	for i := 1; i < total; i++ {
		if i < unhealthy {
			out = append(out, node(fmt.Sprint("sick-", i), "Ready", "Unknown", time.Hour))
		} else {
			out = append(out, healthy(fmt.Sprint("ok-", i)))
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	const tol = 30 * time.Minute
	notReady := func(ago time.Duration) *corev1.Node { return node("subject", "Ready", "False", ago) }
	cases := map[string]struct {
		node     *corev1.Node
		policies []cloudprovider.RepairPolicy
		peers    func(*corev1.Node) []*corev1.Node
		want     Action
		repairAt time.Time
		counts   [3]int // unhealthy, total, allowed
	}{
		"ready node":                        {node: healthy("subject"), want: Healthy},
		"no conditions yet":                 {node: node("subject"), want: Healthy},
		"condition of another type":         {node: node("subject", "Ready", "True", time.Hour, "DiskPressure", "True", time.Hour), want: Healthy},
		"no policies":                       {node: notReady(time.Hour), policies: []cloudprovider.RepairPolicy{}, want: Healthy},
		"not ready, toleration not elapsed": {node: notReady(29 * time.Minute), want: Wait, repairAt: epoch.Add(time.Minute)},
		"not ready, toleration ends now":    {node: notReady(tol), want: Repair, repairAt: epoch, counts: [3]int{1, 1, 1}},
		"unknown, toleration elapsed":       {node: node("subject", "Ready", "Unknown", time.Hour), want: Repair, repairAt: epoch.Add(-30 * time.Minute), counts: [3]int{1, 1, 1}},
		"1 of 5 unhealthy: repaired":        {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 5, 1) }, want: Repair, repairAt: epoch.Add(-tol), counts: [3]int{1, 5, 1}},
		"2 of 5 unhealthy: blocked":         {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 5, 2) }, want: Blocked, repairAt: epoch.Add(-tol), counts: [3]int{2, 5, 1}},
		"2 of 10 unhealthy: repaired":       {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 10, 2) }, want: Repair, repairAt: epoch.Add(-tol), counts: [3]int{2, 10, 2}},
		"3 of 10 unhealthy: blocked":        {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 10, 3) }, want: Blocked, repairAt: epoch.Add(-tol), counts: [3]int{3, 10, 2}},
		"1 of 3 unhealthy: rounded up, ok":  {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 3, 1) }, want: Repair, repairAt: epoch.Add(-tol), counts: [3]int{1, 3, 1}},
		"2 of 6 unhealthy: ceil(1.2)=2, ok": {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return pool(n, 6, 2) }, want: Repair, repairAt: epoch.Add(-tol), counts: [3]int{2, 6, 2}},
		"sole node of its pool":             {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node { return []*corev1.Node{n} }, want: Repair, repairAt: epoch.Add(-tol), counts: [3]int{1, 1, 1}},
		"peers unhealthy but not yet tolerated count": {node: notReady(time.Hour), peers: func(n *corev1.Node) []*corev1.Node {
			return []*corev1.Node{n, node("fresh", "Ready", "False", time.Second), healthy("a"), healthy("b"), healthy("c")}
		}, want: Blocked, repairAt: epoch.Add(-tol), counts: [3]int{2, 5, 1}},
		"earliest toleration wins": {node: node("subject", "Ready", "False", 20*time.Minute, "AcceleratedHardwareReady", "False", 20*time.Minute),
			policies: append(readyPolicies(tol), cloudprovider.RepairPolicy{ConditionType: "AcceleratedHardwareReady", ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute}),
			want:     Repair, repairAt: epoch.Add(-10 * time.Minute), counts: [3]int{1, 1, 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			policies := tc.policies
			if policies == nil {
				policies = readyPolicies(tol)
			}
			peers := []*corev1.Node{tc.node}
			if tc.peers != nil {
				peers = tc.peers(tc.node)
			}
			d := Decide(epoch, tc.node, policies, peers)
			if d.Action != tc.want {
				t.Fatalf("action = %s, want %s (%+v)", d.Action, tc.want, d)
			}
			if tc.want == Healthy {
				return
			}
			if !d.RepairAt.Equal(tc.repairAt) {
				t.Errorf("repairAt = %v, want %v", d.RepairAt, tc.repairAt)
			}
			if got := [3]int{d.Unhealthy, d.Total, d.Allowed}; tc.want != Wait && got != tc.counts {
				t.Errorf("unhealthy, total, allowed = %v, want %v", got, tc.counts)
			}
		})
	}
}

func TestDecideEarliestConditionNamesIt(t *testing.T) {
	policies := append(readyPolicies(30*time.Minute),
		cloudprovider.RepairPolicy{ConditionType: "AcceleratedHardwareReady", ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute})
	n := node("subject", "Ready", "False", 20*time.Minute, "AcceleratedHardwareReady", "False", 20*time.Minute)
	d := Decide(epoch, n, policies, []*corev1.Node{n})
	if d.Condition.Type != "AcceleratedHardwareReady" || d.Policy.TolerationDuration != 10*time.Minute {
		t.Errorf("condition %s with toleration %s, want AcceleratedHardwareReady with 10m", d.Condition.Type, d.Policy.TolerationDuration)
	}
}

func TestAllowedUnhealthy(t *testing.T) {
	for total, want := range map[int]int{0: 0, 1: 1, 3: 1, 5: 1, 6: 2, 10: 2, 11: 3, 100: 20} {
		if got := AllowedUnhealthy(total); got != want {
			t.Errorf("AllowedUnhealthy(%d) = %d, want %d", total, got, want)
		}
	}
}

func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{"Ready": "ready", "AcceleratedHardwareReady": "accelerated_hardware_ready", "DiskPressure": "disk_pressure", "NVMeHealthy": "nv_me_healthy"} {
		if got := SnakeCase(in); got != want {
			t.Errorf("SnakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBlockedMessage(t *testing.T) {
	d := Decision{Unhealthy: 2, Total: 5, Allowed: 1}
	if got, want := blockedMessage("default", d), "Node repair blocked: 2 of 5 of the nodes of NodePool default are unhealthy, more than 20% (at most 1 may be)"; got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
	if got := blockedMessage("", d); got != "Node repair blocked: 2 of 5 of the cluster's nodes (the NodeClaim has no NodePool) are unhealthy, more than 20% (at most 1 may be)" {
		t.Errorf("message without pool = %q", got)
	}
}
