package disruption_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// TestScore checks the Balanced score on Karpenter's design examples and on
// the edge cases where a division could be by zero.
func TestScore(t *testing.T) {
	cases := map[string]struct {
		savings, poolCost, disruption, poolDisruption float64
		want                                          float64
	}{
		// Karpenter's examples: 10 nodes, $58.08/day, disruption cost 80.
		"oversized node replaced":       {savings: 7.26, poolCost: 58.08, disruption: 3, poolDisruption: 80, want: 3.3333},
		"spare capacity delete":         {savings: 4.84, poolCost: 58.08, disruption: 4, poolDisruption: 80, want: 1.6667},
		"marginal move":                 {savings: 2.42, poolCost: 58.08, disruption: 8, poolDisruption: 80, want: 0.4167},
		"uniform pool at half price":    {savings: 2.42, poolCost: 48.40, disruption: 8, poolDisruption: 80, want: 0.5},
		"pool of one node deleted":      {savings: 0.4, poolCost: 0.4, disruption: 3, poolDisruption: 3, want: 1},
		"no savings":                    {savings: 0, poolCost: 1, disruption: 2, poolDisruption: 4, want: 0},
		"a loss":                        {savings: -0.1, poolCost: 1, disruption: 2, poolDisruption: 4, want: 0},
		"zero pool cost":                {savings: 0.1, poolCost: 0, disruption: 2, poolDisruption: 4, want: 0},
		"everything zero":               {want: 0},
		"nothing disrupted":             {savings: 0.1, poolCost: 1, disruption: 0, poolDisruption: 0, want: math.Inf(1)},
		"zero pool disruption":          {savings: 0.1, poolCost: 1, disruption: 2, poolDisruption: 0, want: 0.1},
		"scale invariant (100 nodes)":   {savings: 7.26, poolCost: 580.80, disruption: 3, poolDisruption: 800, want: 3.3333},
		"costly pods on the same node":  {savings: 4.84, poolCost: 58.08, disruption: 31, poolDisruption: 107, want: 0.2877},
		"cheap pods on the same node":   {savings: 4.84, poolCost: 58.08, disruption: 4, poolDisruption: 107, want: 2.2292},
		"savings larger than the pool?": {savings: 2, poolCost: 1, disruption: 1, poolDisruption: 1, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := disruption.Score(tc.savings, tc.poolCost, tc.disruption, tc.poolDisruption)
			if math.IsNaN(got) {
				t.Fatalf("Score = NaN")
			}
			if math.IsInf(tc.want, 1) {
				if !math.IsInf(got, 1) {
					t.Errorf("Score = %v, want +Inf", got)
				}
				return
			}
			if math.Abs(got-tc.want) > 1e-4 {
				t.Errorf("Score = %.6f, want %.4f", got, tc.want)
			}
		})
	}
}

// TestApproved checks the threshold 1/k at and around its boundary.
func TestApproved(t *testing.T) {
	half := disruption.Score(2.42, 48.40, 8, 80) // 0.5 on paper, not in float
	cases := map[string]struct {
		score float64
		k     int32
		want  bool
	}{
		"k=2 at the boundary":         {score: 0.5, k: 2, want: true},
		"k=2 at the float boundary":   {score: half, k: 2, want: true},
		"k=2 just below":              {score: 0.4999, k: 2, want: false},
		"k=1 rejects half":            {score: 0.5, k: 1, want: false},
		"k=1 at the boundary":         {score: 1, k: 1, want: true},
		"k=3 at one third":            {score: 1.0 / 3, k: 3, want: true},
		"k=3 below one third":         {score: 0.33, k: 3, want: false},
		"zero score never passes":     {score: 0, k: 3, want: false},
		"infinite score always":       {score: math.Inf(1), k: 1, want: true},
		"k=0 falls back to 2 (pass)":  {score: 0.5, k: 0, want: true},
		"k=0 falls back to 2 (fail)":  {score: 0.4, k: 0, want: false},
		"negative k falls back to 2 ": {score: 0.6, k: -1, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := disruption.Approved(tc.score, tc.k); got != tc.want {
				t.Errorf("Approved(%v, %d) = %v, want %v", tc.score, tc.k, got, tc.want)
			}
		})
	}
}

func TestConsolidationThreshold(t *testing.T) {
	cases := map[string]struct {
		k    *int32
		want int32
	}{
		"unset is Karpenter's 2": {nil, 2},
		"set":                    {ptr.To[int32](3), 3},
		"invalid zero":           {ptr.To[int32](0), 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := makePool("p").policy(v1.ConsolidationPolicyBalanced).obj()
			np.Spec.Disruption.ConsolidationThreshold = tc.k
			if got := disruption.ConsolidationThreshold(np); got != tc.want {
				t.Errorf("ConsolidationThreshold = %d, want %d", got, tc.want)
			}
		})
	}
}

// scoreSummary is what the tables compare of a MoveScore.
type scoreSummary struct {
	Pool       string
	Method     disruption.Method
	Candidates []string
	Approved   bool
	Score      string // rounded to 3 decimals
}

func summarizeScores(scores []disruption.MoveScore) []scoreSummary {
	var out []scoreSummary
	for _, s := range scores {
		sum := scoreSummary{Pool: s.NodePool.Name, Method: s.Method, Approved: s.Approved, Score: strconv.FormatFloat(math.Round(s.Score*1000)/1000, 'f', -1, 64)}
		for _, c := range s.Candidates {
			sum.Candidates = append(sum.Candidates, c.Name())
		}
		out = append(out, sum)
	}
	return out
}

// TestBalancedDecisions runs Decide on Balanced pools: which moves are made,
// and the scores recorded for them. Prices: small $0.10/h (2 cpu), medium
// $0.20 (4), large $0.40 (8); the pools launch on-demand only, so a
// replacement's price is the on-demand one.
func TestBalancedDecisions(t *testing.T) {
	large := catalog()[2]
	freeLarge := instanceType("large", 8, 0)
	balancedPool := func(k *int32) *v1.NodePool {
		np := makePool("balanced").policy(v1.ConsolidationPolicyBalanced).
			req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
		np.Spec.Disruption.ConsolidationThreshold = k
		return np
	}
	balanced, k1, k3 := balancedPool(nil), balancedPool(ptr.To[int32](1)), balancedPool(ptr.To[int32](3))
	aggressive := makePool("balanced").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
	odNode := func(name string, np *v1.NodePool, it *cloudprovider.InstanceType) *nodeWrapper {
		return makeNode(name, np, it, zoneA, v1.CapacityTypeOnDemand)
	}
	guard := func(w *nodeWrapper) *machine.Machine {
		return w.annotateNode(v1.DoNotDisruptAnnotationKey, "true").obj()
	}
	// poorMove: node a (large) runs 4 pods of 750m that fit a medium; node
	// b (large, full, guarded) takes nothing. Replacing a by a medium saves
	// $0.20 of $0.80 (25%) and disrupts 5 of 7 (71%): score 0.35.
	poorMove := func(np *v1.NodePool) []*machine.Machine {
		return []*machine.Machine{
			odNode("a", np, large).pods(pod("p1", "web", "750m"), pod("p2", "web", "750m"), pod("p3", "web", "750m"), pod("p4", "web", "750m")).obj(),
			guard(odNode("b", np, large).pods(pod("big", "db", "7"))),
		}
	}
	// halfPrice: a pool of one large node whose pods need a medium: saving
	// half the pool's cost for all of its disruption scores 0.5 exactly.
	halfPrice := func(np *v1.NodePool) []*machine.Machine {
		return []*machine.Machine{odNode("a", np, large).pods(pod("p1", "web", "1500m"), pod("p2", "web", "1500m")).obj()}
	}
	cases := map[string]struct {
		pool   *v1.NodePool
		nodes  []*machine.Machine
		types  []*cloudprovider.InstanceType
		want   *summary
		scores []scoreSummary
	}{
		"a worthwhile delete is approved": {
			// a's pod fits on b: deleting a saves 50% of the cost for 50% of the disruption.
			pool: balanced,
			nodes: []*machine.Machine{
				odNode("a", balanced, large).pods(pod("p1", "web", "1")).obj(),
				guard(odNode("b", balanced, large).pods(pod("p2", "web", "1"))),
			},
			want:   &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: true, Score: "1"}},
		},
		"a poor replacement is rejected": {
			pool:   balanced,
			nodes:  poorMove(balanced),
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: false, Score: "0.35"}},
		},
		"the same move passes with consolidationThreshold 3": {
			pool:  k3,
			nodes: poorMove(k3),
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"medium/[on-demand]"}},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: true, Score: "0.35"}},
		},
		"WhenEmptyOrUnderutilized makes the move unscored (k = infinity)": {
			pool:  aggressive,
			nodes: poorMove(aggressive),
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"medium/[on-demand]"}},
		},
		"a pool of one node replaced at half price passes at k=2 (the boundary)": {
			pool:  balanced,
			nodes: halfPrice(balanced),
			want: &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a"}, Replacements: []string{"medium/[on-demand]"}},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: true, Score: "0.5"}},
		},
		"and is rejected at k=1": {
			pool:   k1,
			nodes:  halfPrice(k1),
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: false, Score: "0.5"}},
		},
		"k=1 rejects even a replacement at a quarter of the price in a pool of one node": {
			// The score of a replacement in a uniform pool is 1 - new/old price: never 1.
			pool:   k1,
			nodes:  []*machine.Machine{odNode("a", k1, large).pods(pod("p1", "web", "1")).obj()},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: false, Score: "0.75"}},
		},
		"k=1 approves a delete whose savings share equals its disruption share (the boundary)": {
			pool: k1,
			nodes: []*machine.Machine{
				odNode("a", k1, large).pods(pod("p1", "web", "1")).obj(),
				guard(odNode("b", k1, large).pods(pod("p2", "web", "1"))),
			},
			want:   &summary{Method: disruption.MethodSingleNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionDelete, Candidates: []string{"a"}},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: true, Score: "1"}},
		},
		"a multi-node move is scored against the pool": {
			// Three larges with 1 cpu each go to one medium: saves $1.00 of
			// $1.20 for all of the disruption.
			pool: balanced,
			nodes: []*machine.Machine{
				odNode("a", balanced, large).pods(pod("p1", "web", "1")).obj(),
				odNode("b", balanced, large).pods(pod("p2", "web", "1")).obj(),
				odNode("c", balanced, large).pods(pod("p3", "web", "1")).obj(),
			},
			want: &summary{Method: disruption.MethodMultiNode, Reason: v1.DisruptionReasonUnderutilized, Decision: disruption.DecisionReplace,
				Candidates: []string{"a", "b", "c"}, Replacements: []string{"medium/[on-demand]"}},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodMultiNode, Candidates: []string{"a", "b", "c"}, Approved: true, Score: "0.833"}},
		},
		"free nodes: a delete saves nothing and is rejected, without dividing by zero": {
			pool: balanced,
			nodes: []*machine.Machine{
				odNode("a", balanced, freeLarge).pods(pod("p1", "web", "1")).obj(),
				guard(odNode("b", balanced, freeLarge).pods(pod("p2", "web", "1"))),
			},
			types:  []*cloudprovider.InstanceType{instanceType("small", 2, 0), instanceType("medium", 4, 0), freeLarge},
			scores: []scoreSummary{{Pool: "balanced", Method: disruption.MethodSingleNode, Candidates: []string{"a"}, Approved: false, Score: "0"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input([]*v1.NodePool{tc.pool}, tc.nodes...)
			if tc.types != nil {
				in.NodePools[0].InstanceTypes = tc.types
			}
			out := disruption.Decide(in, disruption.Options{})
			if diff := cmp.Diff(tc.want, summarize(out.Command)); diff != "" {
				t.Errorf("command mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.scores, summarizeScores(out.Scores)); diff != "" {
				t.Errorf("scores mismatch (-want +got):\n%s", diff)
			}
			for _, s := range out.Scores {
				msg := s.Message()
				if !strings.Contains(msg, "Balanced consolidation score") || strings.Contains(msg, "NaN") {
					t.Errorf("score message %q", msg)
				}
			}
		})
	}
}
