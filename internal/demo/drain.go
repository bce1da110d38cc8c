package demo

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/podwatch"
)

// drain deletes the node running the most api pods and follows the drain.
func (s *story) drain(ctx context.Context) error {
	c := s.cluster.Client
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(Namespace), client.MatchingLabels{"app": "api"}); err != nil {
		return err
	}
	perNode := map[string]int{}
	for _, p := range pods.Items {
		perNode[p.Spec.NodeName]++
	}
	victim := ""
	for name, n := range perNode {
		if victim == "" || n > perNode[victim] || (n == perNode[victim] && name < victim) {
			victim = name
		}
	}
	fmt.Fprintf(s.out, "\nStep 2/3  Deleting node %s, which runs %d of the 6 api pods (kubectl delete node).\n", victim, perNode[victim])
	fmt.Fprintln(s.out, "  Dovetail taints it karpenter.sh/disrupted:NoSchedule and evicts its pods through the")
	fmt.Fprintf(s.out, "  Eviction API, which lets only as many api pods go as the PDB allows (minAvailable %d).\n", apiMinAvailable)
	if s.ec2 != nil {
		fmt.Fprintln(s.out, "  Then it terminates the node's EC2 instance (TerminateInstances) and releases its NodeClaim.")
	}

	watch, err := podwatch.Watch(s.clientset, Namespace, "api")
	if err != nil {
		return err
	}
	defer watch.Close()
	watch.Record()
	began := s.clock.Now()
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: victim}}); err != nil {
		return fmt.Errorf("deleting node %s: %w", victim, err)
	}
	last := ""
	err = s.until(ctx, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: victim}, &corev1.Node{})
		gone := apierrors.IsNotFound(err)
		if err != nil && !gone {
			return false, err
		}
		p, err := s.progress(ctx)
		if err != nil {
			return false, err
		}
		ready, minimum := watch.Now()
		state := "draining"
		if gone {
			state = "gone"
		}
		line := fmt.Sprintf("node %-8s api ready %d/6 (lowest %d)  pods running %d  nodes ready %d", state, ready, minimum, p.running, p.readyNodes)
		if line != last {
			fmt.Fprintf(s.out, "  [%6s] %s\n", s.since(began), line)
			last = line
		}
		if s.ec2 != nil {
			s.ec2.narrate(s.out, s.since(began))
		}
		return gone && p.running == s.summary.Pods && p.pending == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the drain of %s: %w", victim, err)
	}
	_, minimum := watch.Now()
	s.summary.DrainedNode, s.summary.DrainDuration, s.summary.MinAPIAvailable = victim, s.clock.Since(began), minimum
	if minimum < apiMinAvailable {
		return fmt.Errorf("api availability fell to %d during the drain, below the PDB's %d", minimum, apiMinAvailable)
	}
	fmt.Fprintf(s.out, "Node drained and removed in %s; every pod runs again and api never had fewer than %d ready pods.\n",
		s.since(began), minimum)
	fmt.Fprintln(s.out, "Nodes now:")
	fmt.Fprintln(s.out)
	f, err := s.printNodes(ctx)
	s.summary.Nodes, s.summary.Spot, s.summary.CostPerHour = f.nodes, f.spot, f.cost
	return err
}

// until polls condition every second until it holds or the step times out.
func (s *story) until(ctx context.Context, condition wait.ConditionWithContextFunc) error {
	return s.untilWithin(ctx, s.opts.StepTimeout, condition)
}

// untilWithin polls condition every second until it holds or timeout
// passes (at least the step timeout).
func (s *story) untilWithin(ctx context.Context, timeout time.Duration, condition wait.ConditionWithContextFunc) error {
	ctx, cancel := context.WithTimeout(ctx, max(timeout, s.opts.StepTimeout))
	defer cancel()
	return wait.PollUntilContextCancel(ctx, time.Second, true, condition)
}

func (s *story) since(t time.Time) string {
	return s.clock.Since(t).Round(100 * time.Millisecond).String()
}

func (s *story) printSummary() {
	m := s.summary
	fmt.Fprintln(s.out, "\nSummary")
	fmt.Fprintf(s.out, "  pods             %d, all Running %s after they were created\n", m.Pods, m.TimeToRunning.Round(100*time.Millisecond))
	fmt.Fprintf(s.out, "  nodes            %d (%d spot, %d on-demand), chosen by price from %s\n", m.Nodes, m.Spot, m.Nodes-m.Spot, "the EC2 catalog")
	fmt.Fprintf(s.out, "  cost             $%.4f per hour\n", m.CostPerHour)
	fmt.Fprintf(s.out, "  plan followed    %d of %d pods bound where Dovetail planned them\n", m.PodsOnPlan, m.Pods)
	fmt.Fprintf(s.out, "  drain            %s in %s\n", m.DrainedNode, m.DrainDuration.Round(100*time.Millisecond))
	fmt.Fprintf(s.out, "  consolidation    %d -> %d nodes, $%.4f -> $%.4f per hour, settled in %s\n",
		m.Nodes, m.ConsolidatedNodes, m.CostPerHour, m.ConsolidatedCost, m.ConsolidationDuration.Round(time.Second))
	fmt.Fprintf(s.out, "  availability     api kept at least %d of 6 ready throughout (PDB minAvailable %d)\n", m.MinAPIAvailable, apiMinAvailable)
}
