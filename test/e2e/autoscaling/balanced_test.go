package autoscaling_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/nodewatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// balancedPool is a disruption pool with consolidationPolicy Balanced and
// the consolidationThreshold, launching only c5.large ($0.085/h, 2 cpu),
// c5.xlarge ($0.17, 4) and c5.2xlarge ($0.34, 8) on demand, so that the
// nodes of a workload, and the score of a move, are known.
func balancedPool(name string, threshold int32) *v1.NodePool {
	np := disruptionPool(name, "5s", nodeBudget("100%"))
	np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
	np.Spec.Disruption.ConsolidationThreshold = &threshold
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{
		Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c5.large", "c5.xlarge", "c5.2xlarge"},
	})
	return np
}

// awayFrom keeps the Deployment's pods off the nodes running the app.
func awayFrom(d *appsv1.Deployment, app string) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		}},
	}}
	return d
}

var scoreRE = regexp.MustCompile(`Balanced consolidation score ([0-9.]+) `)

// scoreOf is the score a Balanced verdict's message carries.
func scoreOf(t *testing.T, message string) float64 {
	t.Helper()
	m := scoreRE.FindStringSubmatch(message)
	if m == nil {
		t.Fatalf("no score in %q", message)
	}
	score, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatalf("score in %q: %v", message, err)
	}
	return score
}

// TestBalancedRejectsAPoorMoveAndMakesAWorthwhileOne: a Balanced pool has
// two c5.2xlarge nodes, b running one 7-cpu pod and a running two 500m
// pods (kept off b) beside a 6-cpu filler. Once the filler goes, replacing
// a by a c5.large saves 37.5% of the pool's cost for 60% of its disruption
// cost (a's 2 pods and itself, 3, of the pool's 5): score 0.625. With
// consolidationThreshold 1 (a move must score 1) the move is rejected, a
// ConsolidationRejected event on a and its NodeClaim carries the score, and
// a stays. With the threshold lowered to 2 (0.5) the same move is
// approved, ConsolidationApproved carries the score, a replacement is
// launched first and a is removed; the two pods run on the c5.large.
func TestBalancedRejectsAPoorMoveAndMakesAWorthwhileOne(t *testing.T) {
	const pool = "balanced"
	port := startScraped(t, balancedPool(pool, 1))
	ns := testEnv.Namespace(t)

	create(t, onPool(workloads.Deployment(ns, "db", 1, "7", "1Gi"), pool))
	b := waitRunning(t, ns, "db", 1, 2*time.Minute)[0].Spec.NodeName
	create(t, awayFrom(onPool(workloads.Deployment(ns, "filler", 1, "6", "1Gi"), pool), "db"))
	a := waitRunning(t, ns, "filler", 1, 2*time.Minute)[0].Spec.NodeName
	create(t, awayFrom(onPool(workloads.Deployment(ns, "web", 2, "500m", "256Mi"), pool), "db"))
	for _, p := range waitRunning(t, ns, "web", 2, 2*time.Minute) {
		if p.Spec.NodeName != a {
			t.Fatalf("web pod %s runs on %s, want node a %s (beside the filler)", p.Name, p.Spec.NodeName, a)
		}
	}
	for name, node := range poolNodes(t, pool) {
		if got := node.Labels[corev1.LabelInstanceTypeStable]; got != "c5.2xlarge" {
			t.Fatalf("node %s is a %s, want c5.2xlarge", name, got)
		}
	}
	claimA := claimOf(t, a).Name
	watch := nodewatch.Watch(t, testEnv.Clientset, pool)
	workloads.Scale(t, testEnv.Client, ns, "filler", 0)

	// 1. Threshold 1: the move is rejected, with its score, and a stays.
	const shares = "savings 37.5% of the pool's cost, disruption 60.0% of the pool's disruption cost"
	rejected := eventOn(t, "ConsolidationRejected", a, "< threshold 1.00 (consolidationThreshold 1, "+shares,
		"replacing 1 node (c5.2xlarge; $0.340/h) with 1 node (c5.large; $0.085/h)")
	eventOn(t, "ConsolidationRejected", claimA, "< threshold 1.00 (consolidationThreshold 1, ")
	if score := scoreOf(t, rejected); score < 0.5 || score >= 1 {
		t.Errorf("rejected move scored %v, want about 0.625: %s", score, rejected)
	}
	expectMetricAtLeast(t, port, fmt.Sprintf(`karpenter_consolidation_moves_total{decision="rejected",nodepool=%q,policy="Balanced"}`, pool), 1)
	expectNodesStay(t, watch, 15*time.Second, a, b)

	// 2. Threshold 2: the same move is worth it and carried out.
	np := &v1.NodePool{}
	np.Name = pool
	if err := testEnv.Client.Patch(context.Background(), np,
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"disruption":{"consolidationThreshold":2}}}`))); err != nil {
		t.Fatalf("lowering consolidationThreshold: %v", err)
	}
	approved := eventOn(t, "ConsolidationApproved", a, ">= threshold 0.50 (consolidationThreshold 2, "+shares,
		"replacing 1 node (c5.2xlarge; $0.340/h) with 1 node (c5.large; $0.085/h)")
	if got, want := scoreOf(t, approved), scoreOf(t, rejected); got != want {
		t.Errorf("approved score %v, rejected %v: the same move should score the same", got, want)
	}
	eventOn(t, "DisruptionLaunching", a, "Launching NodeClaim ")
	expectMetricAtLeast(t, port, fmt.Sprintf(`karpenter_consolidation_moves_total{decision="approved",nodepool=%q,policy="Balanced"}`, pool), 1)
	waitGone(t, 2*time.Minute, a)
	pods := waitRunning(t, ns, "web", 2, 2*time.Minute)
	expectInstanceType(t, pods, "c5.large")
	if !watch.WasDisrupted(a) || watch.WasDisrupted(b) {
		t.Errorf("disrupted: a %v, b %v; want a only", watch.WasDisrupted(a), watch.WasDisrupted(b))
	}
	t.Logf("rejected: %s", rejected)
	t.Logf("approved: %s", approved)
}
