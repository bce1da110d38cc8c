package interruption_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/podwatch"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// claimEvents lists "reason: message" of the NodeClaim's events.
func claimEvents(ctx context.Context, name string) ([]string, error) {
	list := &corev1.EventList{}
	if err := cluster.Client.List(ctx, list); err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "NodeClaim" && e.InvolvedObject.Name == name {
			out = append(out, fmt.Sprintf("%s: %s", e.Reason, e.Message))
		}
	}
	return out, nil
}

// hasReason reports an event "reason: ..." among the events.
func hasReason(events []string, reason string) bool {
	return slices.ContainsFunc(events, func(e string) bool {
		return len(e) > len(reason) && e[:len(reason)+1] == reason+":"
	})
}

// waitClaimEvent waits until the NodeClaim has an event with the reason.
func waitClaimEvent(t *testing.T, name, reason string, timeout time.Duration) []string {
	t.Helper()
	var events []string
	env.Eventually(t, timeout, fmt.Sprintf("a %s event on NodeClaim %s", reason, name), func(ctx context.Context) (bool, error) {
		var err error
		events, err = claimEvents(ctx, name)
		return hasReason(events, reason), err
	})
	return events
}

// waitClaimDeleting waits until the NodeClaim is being deleted or gone.
func waitClaimDeleting(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	env.Eventually(t, timeout, "NodeClaim "+name+" to be deleted", func(ctx context.Context) (bool, error) {
		nc := &v1.NodeClaim{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
		}
		return !nc.DeletionTimestamp.IsZero(), nil
	})
}

// pdb creates a PodDisruptionBudget keeping minAvailable of the app's pods.
func pdb(t *testing.T, ns, app string, minAvailable int) {
	t.Helper()
	cluster.Create(t, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptrIntOrString(minAvailable),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	})
}

func ptrIntOrString(n int) *intstr.IntOrString {
	v := intstr.FromInt32(int32(n))
	return &v
}

// spreadOverZones spreads the Deployment's pods evenly over the zones.
func spreadOverZones(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
	}}
	return d
}

// watchAvailability follows the app's Ready pods until the test ends.
func watchAvailability(t *testing.T, ns, app string) *podwatch.Availability {
	t.Helper()
	a, err := podwatch.Watch(cluster.Clientset, ns, app)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

// nodeReady reports the Node's Ready condition True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poolNodes lists the NodePool's Nodes.
func poolNodes(ctx context.Context, pool string) ([]corev1.Node, error) {
	list := &corev1.NodeList{}
	err := cluster.Client.List(ctx, list, client.MatchingLabels{v1.NodePoolLabelKey: pool})
	return list.Items, err
}

// victimOf picks the node running the most of the pods and returns it with
// its NodeClaim and instance.
func victimOf(t *testing.T, pool string, pods []corev1.Pod) (*corev1.Node, *v1.NodeClaim, ec2.Instance) {
	t.Helper()
	perNode := map[string]int{}
	for _, p := range pods {
		perNode[p.Spec.NodeName]++
	}
	victim := ""
	for name, n := range perNode {
		if victim == "" || n > perNode[victim] || (n == perNode[victim] && name < victim) {
			victim = name
		}
	}
	node := cluster.NodesOf(t, pods)[victim]
	nc := cluster.ClaimOfNode(t, pool, victim)
	id := awse2e.InstanceIDOf(nc.Status.ProviderID)
	inst, ok := cluster.AWS.EC2().Instance(id)
	if !ok {
		t.Fatalf("node %s (NodeClaim %s) names instance %q, which EC2 does not know", victim, nc.Name, id)
	}
	return node, nc, inst
}

// waitInitialized waits until the NodeClaim is Initialized.
func waitInitialized(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	env.Eventually(t, timeout, "NodeClaim "+name+" to be initialized", func(ctx context.Context) (bool, error) {
		nc := &v1.NodeClaim{}
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeInitialized), nil
	})
}

// claimCounter records the name of every NodeClaim of a NodePool created
// while it watches, from the watch's events (a claim whose launch failed
// and was deleted at once is counted too).
type claimCounter struct {
	mu    sync.Mutex
	names map[string]bool
	stop  func()
	done  chan struct{}
}

// countClaims starts counting the pool's NodeClaims; existing ones count too.
func countClaims(t *testing.T, pool string) *claimCounter {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.ControlPlane.RESTConfig, client.Options{Scheme: cluster.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &claimCounter{names: map[string]bool{}, stop: cancel, done: make(chan struct{})}
	w, err := wc.Watch(ctx, &v1.NodeClaimList{}, client.MatchingLabels{v1.NodePoolLabelKey: pool})
	if err != nil {
		cancel()
		t.Fatalf("watching the NodeClaims of %s: %v", pool, err)
	}
	go func() {
		defer close(c.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
				continue
			}
			if nc, ok := ev.Object.(*v1.NodeClaim); ok {
				c.mu.Lock()
				c.names[nc.Name] = true
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// count is how many NodeClaims were seen.
func (c *claimCounter) count() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.names))
	for n := range c.names {
		names = append(names, n)
	}
	slices.Sort(names)
	return len(names), names
}

// launchedInstances lists every instance, in any state, launched for the pool.
func launchedInstances(pool string) []ec2.Instance {
	var out []ec2.Instance
	for _, inst := range cluster.AWS.EC2().Instances() {
		if inst.Tags[awse2e.TagNodePool] == pool {
			out = append(out, inst)
		}
	}
	return out
}

// offering names an instance's (type, zone, capacity type).
func offering(instanceType, zone, capacityType string) string {
	return instanceType + "/" + zone + "/" + capacityType
}

// claimOffering names the offering a launched NodeClaim got.
func claimOffering(nc *v1.NodeClaim) string {
	return offering(nc.Labels[corev1.LabelInstanceTypeStable], nc.Labels[corev1.LabelTopologyZone], nc.Labels[v1.CapacityTypeLabelKey])
}
