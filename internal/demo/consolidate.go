package demo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podwatch"
)

// The demo's consolidation settings, shorter than the defaults so that the
// story fits in a couple of minutes.
const (
	demoConsolidateAfter = "10s"
	demoBudget           = "50%"
	// demoValidationDelay replaces the controller's 15 s default.
	demoValidationDelay = 5 * time.Second
	// settleWindow is how long nothing may change before consolidation
	// counts as finished: longer than the disruption loop's 10 s poll plus
	// consolidateAfter and the validation delay.
	settleWindow = 30 * time.Second
)

// scaleDown is how many replicas each workload keeps when load drops.
var scaleDown = map[string]int32{"web": 3, "api": 6, "batch": 1}

// consolidate scales the workloads down and follows consolidation until the
// cluster is cheaper and nothing has changed for settleWindow.
func (s *story) consolidate(ctx context.Context) error {
	c := s.cluster.Client
	var drops []string
	for _, w := range workloads() {
		if n := scaleDown[w.name]; n != w.replicas {
			drops = append(drops, fmt.Sprintf("%s from %d to %d pods", w.name, w.replicas, n))
		}
	}
	fmt.Fprintf(s.out, "\nStep 3/3  Load drops: %s.\n", strings.Join(drops, ", "))
	fmt.Fprintln(s.out, "  Dovetail deletes nodes whose pods fit elsewhere and replaces nodes with cheaper ones,")
	fmt.Fprintln(s.out, "  re-simulating each decision before it acts and never breaking the api PDB. For the demo")
	fmt.Fprintf(s.out, "  the NodePool's consolidateAfter is %s and its budget %s of its nodes (the validation\n", demoConsolidateAfter, demoBudget)
	fmt.Fprintf(s.out, "  delay %s); a production pool keeps its own settings.\n", demoValidationDelay)

	np := &v1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: "default"}, np); err != nil {
		return fmt.Errorf("reading the default NodePool: %w", err)
	}
	stored := np.DeepCopy()
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(demoConsolidateAfter)
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString(demoBudget)}}
	if err := c.Patch(ctx, np, client.MergeFrom(stored)); err != nil {
		return fmt.Errorf("setting the NodePool's consolidation settings: %w", err)
	}

	watch, err := podwatch.Watch(s.clientset, Namespace, "api")
	if err != nil {
		return err
	}
	defer watch.Close()
	watch.Record()
	before := s.summary.CostPerHour
	want := 0
	for _, w := range workloads() {
		replicas := scaleDown[w.name]
		want += int(replicas)
		if replicas == w.replicas {
			continue
		}
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: w.name}, d); err != nil {
			return fmt.Errorf("reading deployment %s: %w", w.name, err)
		}
		stored := d.DeepCopy()
		d.Spec.Replicas = ptr.To(replicas)
		if err := c.Patch(ctx, d, client.MergeFrom(stored)); err != nil {
			return fmt.Errorf("scaling deployment %s: %w", w.name, err)
		}
	}

	began := s.clock.Now()
	var last string
	var quietSince time.Time
	err = s.untilWithin(ctx, 4*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := s.progress(ctx)
		if err != nil {
			return false, err
		}
		view, err := s.disruptionView(ctx)
		if err != nil {
			return false, err
		}
		ready, minimum := watch.Now()
		line := fmt.Sprintf("nodes %-2d $/h %.4f  disrupting %d  pods running %-2d api ready %d/6 (lowest %d)",
			view.nodes, view.cost, view.disrupting, p.running, ready, minimum)
		now := s.clock.Now()
		if line != last {
			fmt.Fprintf(s.out, "  [%6s] %s\n", s.since(began), line)
			last, quietSince = line, now
		}
		if s.ec2 != nil {
			s.ec2.narrate(s.out, s.since(began))
		}
		settled := p.running == want && p.pending == 0 && view.disrupting == 0 && view.cost < before
		return settled && now.Sub(quietSince) >= settleWindow, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for consolidation to settle: %w", err)
	}
	_, minimum := watch.Now()
	s.summary.MinAPIAvailable = min(s.summary.MinAPIAvailable, minimum)
	if minimum < apiMinAvailable {
		return fmt.Errorf("api availability fell to %d during consolidation, below the PDB's %d", minimum, apiMinAvailable)
	}
	fmt.Fprintf(s.out, "Consolidated in %s (settled for %s): $%.4f/h -> ", s.since(began), settleWindow, before)
	nodes, _, cost, err := s.listNodes(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "$%.4f/h, %d nodes. Nodes now:\n\n", cost, nodes)
	s.summary.ConsolidatedNodes, s.summary.ConsolidatedCost = nodes, cost
	s.summary.ConsolidationDuration = s.clock.Since(began)
	_, err = s.printNodes(ctx)
	return err
}

// disruptionState is what the consolidation step shows each second.
type disruptionState struct {
	nodes, disrupting int
	cost              float64
}

// disruptionView counts the nodes and their price, and the NodeClaims and
// nodes being disrupted (deleted, or tainted karpenter.sh/disrupted).
func (s *story) disruptionView(ctx context.Context) (disruptionState, error) {
	var v disruptionState
	nodes, err := s.nodes(ctx)
	if err != nil {
		return v, err
	}
	for _, n := range nodes {
		v.nodes++
		v.cost += s.prices.OfLabels(n.Labels)
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == v1.DisruptedTaintKey })
		if tainted || n.DeletionTimestamp != nil {
			v.disrupting++
		}
	}
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return v, err
	}
	for _, nc := range claims.Items {
		if nc.DeletionTimestamp != nil && nc.Status.NodeName == "" {
			v.disrupting++ // a claim going away without a node (a rolled-back replacement)
		}
	}
	return v, nil
}
