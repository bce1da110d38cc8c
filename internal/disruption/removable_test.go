package disruption_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// TestRemovable: with ReportRemovable, Decide names the nodes multi-node
// consolidation takes with no budget in the way (here two of four large
// nodes at a quarter of their cpu, not the full one), whether or not a
// budget holds them back now (one whose schedule is in force). It names
// none when nothing will ever remove them (a budget of zero without a
// schedule: consolidation turned off for the pool; a Balanced pool that
// rejects the move, here because a $10/h node makes the saving a small
// share of its cost), and reports nothing without the option, when
// consolidation is skipped, or when an emptiness command comes first.
func TestRemovable(t *testing.T) {
	small, large, whale := instanceType("small", 2, 0.10), instanceType("large", 8, 0.40), instanceType("whale", 64, 10)
	always, hour := "* * * * *", metav1.Duration{Duration: time.Hour}
	input := func(mutate func(*v1.NodePool), extra ...string) disruption.Input {
		pool := makePool("default").req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).obj()
		if mutate != nil {
			mutate(pool)
		}
		nodes := []*machine.Machine{makeNode("full", pool, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("f1", "web", "4"), pod("f2", "web", "3500m")).obj()}
		for _, name := range []string{"a", "b", "c", "d"} {
			nodes = append(nodes, makeNode(name, pool, large, zoneA, v1.CapacityTypeOnDemand).pods(pod("p-"+name, "web", "2")).obj())
		}
		for _, name := range extra {
			if name == "whale" {
				// A node no move may take that makes the pool's cost 6x larger.
				w := annotate(pod("w", "db", "60"), v1.DoNotDisruptAnnotationKey, "true")
				nodes = append(nodes, makeNode(name, pool, whale, zoneA, v1.CapacityTypeOnDemand).pods(w).obj())
				continue
			}
			nodes = append(nodes, makeNode(name, pool, small, zoneA, v1.CapacityTypeOnDemand).obj())
		}
		return disruption.Input{Now: now, Nodes: nodes, NodePools: []simulator.NodePool{{NodePool: pool, InstanceTypes: []*cloudprovider.InstanceType{small, large, whale}}}}
	}
	zeroBudget := func(schedule *string) func(*v1.NodePool) {
		return func(np *v1.NodePool) {
			b := v1.Budget{Nodes: intstr.FromString("0")}
			if schedule != nil {
				b.Schedule, b.Duration = schedule, &hour
			}
			np.Spec.Disruption.Budgets = []v1.Budget{b}
		}
	}
	opts := disruption.Options{ReportRemovable: true}

	unblocked := disruption.Decide(input(nil), opts)
	if unblocked.Command == nil || unblocked.Command.Method != disruption.MethodMultiNode {
		t.Fatalf("with a 100%% budget: command %+v, want multi-node consolidation", summarize(unblocked.Command))
	}
	var taken []string
	for _, c := range unblocked.Command.Candidates {
		taken = append(taken, c.Name())
	}
	slices.Sort(taken)
	if len(taken) < 2 || slices.Contains(taken, "full") {
		t.Fatalf("multi-node took %v; the check needs under-used nodes only", taken)
	}
	for name, tc := range map[string]struct {
		in   disruption.Input
		opts disruption.Options
		want []string
		// known is false when nothing may be concluded from Removable.
		known bool
	}{
		"budget 100%":                      {in: input(nil), opts: opts, want: taken, known: true},
		"a scheduled budget of 0 in force": {in: input(zeroBudget(&always)), opts: opts, want: taken, known: true},
		"a budget of 0 without a schedule": {in: input(zeroBudget(nil)), opts: opts, known: true},
		"a Balanced pool rejects the move": {in: input(func(np *v1.NodePool) {
			np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyBalanced
		}, "whale"), opts: opts, known: true},
		"without ReportRemovable":         {in: input(zeroBudget(&always)), opts: disruption.Options{}},
		"an emptiness command goes first": {in: input(nil, "empty"), opts: opts},
		"consolidation skipped": {in: func() disruption.Input {
			in := input(zeroBudget(&always))
			in.SkipConsolidation = true
			return in
		}(), opts: opts},
	} {
		out := disruption.Decide(tc.in, tc.opts)
		got := slices.Sorted(slices.Values(out.Removable))
		if out.RemovableKnown != tc.known || (tc.known && !slices.Equal(got, tc.want)) || (!tc.known && len(got) > 0) {
			t.Errorf("%s: Removable = %v (known %v), want %v (known %v)", name, got, out.RemovableKnown, tc.want, tc.known)
		}
	}
}

// BenchmarkRemovable is what ReportRemovable adds to a decision: the
// convergence benchmark's clusters after the scale-down to a third, less
// the nodes it emptied, with the default 10% budget, decided with and
// without it.
//
//	go test -run '^$' -bench Removable -benchtime 3x ./internal/disruption/
func BenchmarkRemovable(b *testing.B) {
	for _, n := range []int{500, 1000, 2000} {
		in := scaledDown(benchInput(n), 3)
		in.NodePools[0].NodePool.Spec.Disruption.Budgets = []v1.Budget{budget("10%")}
		// Without the nodes the scale-down emptied: emptiness would act first.
		in.Nodes = slices.DeleteFunc(slices.Clone(in.Nodes), func(m *machine.Machine) bool { return len(m.Pods) == 0 })
		for _, report := range []bool{false, true} {
			b.Run(fmt.Sprintf("nodes=%d/report=%v", n, report), func(b *testing.B) {
				var out disruption.Outcome
				for b.Loop() {
					out = disruption.Decide(in, disruption.Options{ReportRemovable: report})
				}
				b.ReportMetric(float64(len(out.Removable)), "removable")
			})
		}
	}
}
