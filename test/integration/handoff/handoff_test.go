package handoff_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/pod/handoff"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
	"github.com/dovetail-autoscaler/dovetail/internal/state/informer"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// start runs the cluster-state informers and the hand-off controller, as
// the operator does, and returns the model they share.
func start(t *testing.T) *state.Cluster {
	t.Helper()
	cluster, _ := startCounting(t)
	return cluster
}

// startCounting is start that also counts the times the controller woke
// provisioning.
func startCounting(t *testing.T) (*state.Cluster, *atomic.Int32) {
	t.Helper()
	cluster := state.NewCluster(clocktesting.NewFakeClock(time.Now()))
	replans := &atomic.Int32{}
	testEnv.StartManager(t, func(mgr manager.Manager) error {
		for _, c := range informer.NewControllers(cluster) {
			if err := c.Register(context.Background(), mgr); err != nil {
				return err
			}
		}
		return handoff.NewController(mgr.GetClient(), cluster, func() { replans.Add(1) }).Register(context.Background(), mgr)
	})
	return cluster, replans
}

func pendingPod(t *testing.T, ns, name, nominated string) *corev1.Pod {
	t.Helper()
	return pendingPodWithCPU(t, ns, name, nominated, "")
}

// pendingPodWithCPU makes a pending pod requesting cpu ("" for none).
func pendingPodWithCPU(t *testing.T, ns, name, nominated, cpu string) *corev1.Pod {
	t.Helper()
	container := corev1.Container{Name: "app"}
	if cpu != "" {
		container.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	pod := testEnv.CreatePendingPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container}},
	})
	if nominated == "" {
		return pod
	}
	stored := pod.DeepCopy()
	pod.Status.NominatedNodeName = nominated
	if err := testEnv.Client.Status().Patch(context.Background(), pod, client.MergeFrom(stored)); err != nil {
		t.Fatalf("nominating pod %s: %v", name, err)
	}
	return pod
}

func readyNode(name, providerID string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		},
	}
}

// createNode creates node with its status and the taints it was given: the
// API server's TaintNodesByCondition admission adds the not-ready taint to
// every new Node, which the node lifecycle controller (not running here)
// removes once the node is Ready.
func createNode(t *testing.T, node *corev1.Node) {
	t.Helper()
	taints := node.Spec.Taints
	testEnv.CreateWithStatus(t, node)
	deleteOnCleanup(t, node)
	stored := node.DeepCopy()
	node.Spec.Taints = taints
	if err := testEnv.Client.Patch(context.Background(), node, client.MergeFrom(stored)); err != nil {
		t.Fatalf("setting the taints of node %s: %v", node.Name, err)
	}
}

func deleteOnCleanup(t *testing.T, obj client.Object) {
	t.Cleanup(func() {
		_ = testEnv.Client.Delete(context.Background(), obj)
	})
}

// clearNomination clears the pod's nomination, as the kube-scheduler does
// when it fails to place the pod, once the controller's cache has seen it.
func clearNomination(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	got := pod.DeepCopy()
	env.Get(context.Background(), t, testEnv.Client, got)
	stored := got.DeepCopy()
	got.Status.NominatedNodeName = ""
	if err := testEnv.Client.Status().Patch(context.Background(), got, client.MergeFrom(stored)); err != nil {
		t.Fatalf("clearing the nomination of %s: %v", pod.Name, err)
	}
}

// nominatedTo waits until the pod is nominated to node ("" for none).
func nominatedTo(t *testing.T, pod *corev1.Pod, node string) {
	t.Helper()
	env.Eventually(t, 30*time.Second, "pod "+pod.Name+" nominated to "+node, func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return false, err
		}
		return got.Status.NominatedNodeName == node, nil
	})
}

// handOff plans pods onto machine and hands them off as the provisioner
// does, again until the model has seen them waiting (and, unless node is
// "", the Node of that name), so that every pod's hand-off targets machine.
func handOff(t *testing.T, cluster *state.Cluster, machine, node string, pods ...types.NamespacedName) {
	t.Helper()
	env.Eventually(t, 30*time.Second, "the model to see the pods planned onto "+machine, func(context.Context) (bool, error) {
		cluster.PlanPods(machine, pods)
		cluster.HandOff(pods)
		for _, pod := range pods {
			if target, ok := cluster.HandOffTarget(pod); !ok || target != machine {
				return false, nil
			}
		}
		return node == "" || cluster.HasNode(node), nil
	})
}

// TestHandOffKeepsPodsNominated: pods handed off onto a NodeClaim are
// nominated to its Node (named otherwise, as on AWS) when it registers,
// nominated again when the kube-scheduler clears the nomination, and moved
// when a later plan puts them elsewhere; a nomination to a missing node is
// replaced, one someone else made to a node that exists is kept, and a pod
// nobody handed off is never nominated.
func TestHandOffKeepsPodsNominated(t *testing.T) {
	ns := testEnv.Namespace(t)
	existing := readyNode("handoff-existing", "kwok://handoff-existing")
	createNode(t, existing)

	planned := pendingPod(t, ns, "planned", "")
	stale := pendingPod(t, ns, "stale", "node-that-went")
	preempting := pendingPod(t, ns, "preempting", existing.Name)
	unplanned := pendingPod(t, ns, "unplanned", "")
	key := client.ObjectKeyFromObject
	handedOff := []types.NamespacedName{key(planned), key(stale), key(preempting)}

	cluster := start(t)
	// The provisioner plans and hands off pods the model has seen waiting.
	handOff(t, cluster, "handoff-claim", existing.Name, handedOff...)

	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "handoff-claim", Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}},
		}},
		Status: v1.NodeClaimStatus{ProviderID: "kwok://handoff-i-1"},
	}
	testEnv.CreateWithStatus(t, claim)
	deleteOnCleanup(t, claim)
	// Nothing is nominated before the claim has a Node.
	// The Node is created before its status says how much it holds (as
	// kwok and kubelets do): its pods are nominated once it does.
	registered := readyNode("ip-10-0-0-1", "kwok://handoff-i-1", v1.UnregisteredNoExecuteTaint())
	allocatable := registered.Status.Allocatable
	registered.Status.Allocatable = nil
	createNode(t, registered)
	registered.Status.Allocatable = allocatable
	if err := testEnv.Client.Status().Update(context.Background(), registered); err != nil {
		t.Fatalf("writing the node's allocatable: %v", err)
	}

	nominatedTo(t, planned, registered.Name)
	nominatedTo(t, stale, registered.Name)

	// The kube-scheduler fails to place the pod (the node still carries the
	// unregistered taint) and clears its nomination: it is nominated again
	// only once the node can take it, and no more than MaxRenominations
	// times.
	clearNomination(t, planned)
	nominatedTo(t, stale, registered.Name)
	stored := registered.DeepCopy()
	registered.Spec.Taints = nil
	if err := testEnv.Client.Patch(context.Background(), registered, client.MergeFrom(stored)); err != nil {
		t.Fatalf("removing the unregistered taint: %v", err)
	}
	nominatedTo(t, planned, registered.Name)
	for range handoff.MaxRenominations - 1 {
		clearNomination(t, planned)
		nominatedTo(t, planned, registered.Name)
	}

	// A later pass plans the pod onto the existing node: the nomination,
	// ours, follows the plan.
	cluster.PlanPods(existing.Name, []types.NamespacedName{key(planned)})
	cluster.HandOff([]types.NamespacedName{key(planned)})
	nominatedTo(t, planned, existing.Name)

	for _, pod := range []*corev1.Pod{preempting, unplanned} {
		got := pod.DeepCopy()
		env.Get(context.Background(), t, testEnv.Client, got)
		if got.Status.NominatedNodeName != pod.Status.NominatedNodeName {
			t.Errorf("pod %s nominated to %q, want %q as it was", pod.Name, got.Status.NominatedNodeName, pod.Status.NominatedNodeName)
		}
	}
}

// TestHandOffEndsWithThePlan: a pod planned again without a hand-off, or
// whose machine is being removed, is no longer nominated again when the
// scheduler clears its nomination.
func TestHandOffEndsWithThePlan(t *testing.T) {
	ns := testEnv.Namespace(t)
	node := readyNode("handoff-ends", "kwok://handoff-ends")
	createNode(t, node)
	replanned := pendingPod(t, ns, "replanned", "")
	removed := pendingPod(t, ns, "removed", "")
	key := client.ObjectKeyFromObject
	pods := []types.NamespacedName{key(replanned), key(removed)}

	cluster := start(t)
	handOff(t, cluster, node.Name, node.Name, pods...)
	nominatedTo(t, replanned, node.Name)
	nominatedTo(t, removed, node.Name)

	cluster.PlanPods(node.Name, []types.NamespacedName{key(replanned)})
	cluster.MarkForDeletion(node.Spec.ProviderID)
	if _, ok := cluster.HandOffTarget(key(removed)); ok {
		t.Fatal("a pod planned onto a machine being removed is still handed off")
	}
	for _, pod := range []*corev1.Pod{replanned, removed} {
		got := pod.DeepCopy()
		env.Get(context.Background(), t, testEnv.Client, got)
		stored := got.DeepCopy()
		got.Status.NominatedNodeName = ""
		if err := testEnv.Client.Status().Patch(context.Background(), got, client.MergeFrom(stored)); err != nil {
			t.Fatalf("clearing the nomination: %v", err)
		}
	}
	// A pod that is still handed off shows the controller has processed
	// the clearing events: nominate one and wait for it.
	witness := pendingPod(t, ns, "witness", "")
	handOff(t, cluster, "handoff-ends-2", "", key(witness))
	other := readyNode("handoff-ends-2", "kwok://handoff-ends-2")
	createNode(t, other)
	nominatedTo(t, witness, other.Name)
	for _, pod := range []*corev1.Pod{replanned, removed} {
		got := pod.DeepCopy()
		env.Get(context.Background(), t, testEnv.Client, got)
		if got.Status.NominatedNodeName != "" {
			t.Errorf("pod %s nominated again to %q after its hand-off ended", pod.Name, got.Status.NominatedNodeName)
		}
	}
}

// TestHandOffDoesNotOverfillANode: when a pod the plan did not expect took
// room on a planned node, only the handed-off pods that still fit there are
// nominated (the kube-scheduler keeps room for each nominated pod, so
// overfilling would leave them all waiting on each other), and a pod whose
// nomination the scheduler cleared is not nominated again into room
// another now holds.
func TestHandOffDoesNotOverfillANode(t *testing.T) {
	ns := testEnv.Namespace(t)
	node := readyNode("handoff-full", "kwok://handoff-full") // 2 cpu
	createNode(t, node)
	stranger := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stranger"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "app", Image: env.PauseImage,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	if err := testEnv.Client.Create(context.Background(), stranger); err != nil {
		t.Fatal(err)
	}
	a := pendingPodWithCPU(t, ns, "planned-a", "", "600m")
	b := pendingPodWithCPU(t, ns, "planned-b", "", "600m")
	key := client.ObjectKeyFromObject
	pods := []types.NamespacedName{key(a), key(b)}

	cluster, replans := startCounting(t)
	handOff(t, cluster, node.Name, node.Name, pods...)
	nominated := func(ctx context.Context) (int, error) {
		n := 0
		for _, pod := range []*corev1.Pod{a, b} {
			got := pod.DeepCopy()
			if err := testEnv.Client.Get(ctx, key(got), got); err != nil {
				return 0, err
			}
			if got.Status.NominatedNodeName == node.Name {
				n++
			}
		}
		return n, nil
	}
	onlyOne := func(what string) {
		env.Eventually(t, 30*time.Second, what, func(ctx context.Context) (bool, error) {
			n, err := nominated(ctx)
			if n > 1 {
				t.Fatalf("both planned pods nominated: 1 cpu bound and 2 x 600m overfill 2 cpu")
			}
			return n == 1, err
		})
	}
	onlyOne("one planned pod nominated")
	// The other is refused the node: provisioning is woken to plan it
	// elsewhere, and will not plan it onto this node again.
	env.Eventually(t, 30*time.Second, "the pod without room refused the node", func(context.Context) (bool, error) {
		refused := cluster.Refused([]*corev1.Pod{a, b})
		return len(refused) == 1 && slices.Equal(refused[a.UID], []string{node.Name}) != slices.Equal(refused[b.UID], []string{node.Name}), nil
	})
	if replans.Load() == 0 {
		t.Error("provisioning was not woken for the refused pod")
	}
	// The scheduler clears the nominations, each pod wakes: again only one
	// gets the room, however often this happens.
	for range handoff.MaxRenominations {
		clearNomination(t, a)
		clearNomination(t, b)
		cluster.HandOff(pods) // both wake, as on the scheduler's next attempt
		onlyOne("one planned pod nominated again")
	}
	n, err := nominated(context.Background())
	if err != nil || n != 1 {
		t.Errorf("%d planned pods nominated (%v), want 1", n, err)
	}
}

// TestHandOffGivesUpOnANodeTheSchedulerRefuses: a pod the kube-scheduler
// keeps failing on its planned node (it clears the nomination each time)
// is nominated there MaxRenominations times after the first, then no more,
// and the count survives plans that move the pod away and back: the
// hand-off gives up, the model drops the plan and records the refusal
// (provisioning then plans the pod elsewhere), and provisioning is woken.
// Before the count was per pod and node and reset on each move, and a pod
// whose plans alternated between two such nodes was nominated forever
// (36,762 nominations in a CI run of the fidelity test).
func TestHandOffGivesUpOnANodeTheSchedulerRefuses(t *testing.T) {
	ns := testEnv.Namespace(t)
	refusing := readyNode("handoff-refusing", "kwok://handoff-refusing")
	createNode(t, refusing)
	other := readyNode("handoff-other", "kwok://handoff-other")
	createNode(t, other)
	pod := pendingPod(t, ns, "refused", "")
	key := client.ObjectKeyFromObject(pod)
	cluster, replans := startCounting(t)
	handOff(t, cluster, refusing.Name, refusing.Name, key)
	nominatedTo(t, pod, refusing.Name)
	// A plan moves it away and back in between: the count goes on.
	clearNomination(t, pod)
	nominatedTo(t, pod, refusing.Name)
	handOff(t, cluster, other.Name, other.Name, key)
	nominatedTo(t, pod, other.Name)
	handOff(t, cluster, refusing.Name, refusing.Name, key)
	nominatedTo(t, pod, refusing.Name) // the third nomination there
	clearNomination(t, pod)
	nominatedTo(t, pod, refusing.Name) // the fourth: MaxRenominations after the first
	if handoff.MaxRenominations != 3 {
		t.Fatalf("the test counts 3 renominations, MaxRenominations is %d", handoff.MaxRenominations)
	}
	clearNomination(t, pod)
	env.Eventually(t, 30*time.Second, "the hand-off to give up", func(context.Context) (bool, error) {
		return slices.Equal(cluster.Refused([]*corev1.Pod{pod})[pod.UID], []string{refusing.Name}), nil
	})
	if _, ok := cluster.HandOffTarget(key); ok {
		t.Error("the refused pod is still handed off")
	}
	if replans.Load() == 0 {
		t.Error("provisioning was not woken for the refused pod")
	}
	got := pod.DeepCopy()
	env.Get(context.Background(), t, testEnv.Client, got)
	if got.Status.NominatedNodeName != "" {
		t.Errorf("the refused pod is nominated to %q", got.Status.NominatedNodeName)
	}
	// The refusal ends with the node.
	if err := testEnv.Client.Delete(context.Background(), refusing); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 30*time.Second, "the refusal to end with the node", func(context.Context) (bool, error) {
		return len(cluster.Refused([]*corev1.Pod{pod})) == 0, nil
	})
}

// TestHandOffNominatesSpreadPodsTheSchedulerWouldAdmit: two pods of a zone
// spread group (maxSkew 1) planned onto one node of an empty two-zone
// cluster are not both nominated there: the kube-scheduler counts the pods
// nominated to a node as running there, so each would see the other push
// the zone past maxSkew and neither would bind (199 of 1,000 pods stayed
// pending so in CI). One is nominated; the other once a pod of the group
// runs in the other zone and the first has bound.
func TestHandOffNominatesSpreadPodsTheSchedulerWouldAdmit(t *testing.T) {
	ns := testEnv.Namespace(t)
	zoned := func(name, zone string) *corev1.Node {
		n := readyNode(name, "kwok://"+name)
		n.Labels[corev1.LabelTopologyZone] = zone
		return n
	}
	a, b := zoned("handoff-spread-a", "zone-a"), zoned("handoff-spread-b", "zone-b")
	createNode(t, a)
	createNode(t, b)
	spreadPod := func(name string) *corev1.Pod {
		return testEnv.CreatePendingPod(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}},
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}},
		})
	}
	first, second, elsewhere := spreadPod("web-1"), spreadPod("web-2"), spreadPod("web-3")
	key := client.ObjectKeyFromObject
	planned := []types.NamespacedName{key(first), key(second)}
	cluster := start(t)
	handOff(t, cluster, a.Name, a.Name, planned...)
	nominatedPods := func(ctx context.Context) ([]*corev1.Pod, error) {
		var out []*corev1.Pod
		for _, p := range []*corev1.Pod{first, second} {
			got := &corev1.Pod{}
			if err := testEnv.Client.Get(ctx, key(p), got); err != nil {
				return nil, err
			}
			if got.Status.NominatedNodeName == a.Name {
				out = append(out, got)
			}
		}
		return out, nil
	}
	var held *corev1.Pod
	env.Eventually(t, 30*time.Second, "one of the two nominated", func(ctx context.Context) (bool, error) {
		pods, err := nominatedPods(ctx)
		if len(pods) > 1 {
			t.Fatal("both pods of the spread group nominated to one node of an empty two-zone cluster")
		}
		if len(pods) == 1 {
			held = pods[0]
		}
		return len(pods) == 1, err
	})
	// A pod of the group runs in zone b, then the nominated one binds to
	// a: zone a may take one more.
	bind := func(pod *corev1.Pod, node string) {
		t.Helper()
		binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
		if err := testEnv.Client.SubResource("binding").Create(context.Background(), pod, binding); err != nil {
			t.Fatalf("binding %s to %s: %v", pod.Name, node, err)
		}
	}
	bind(elsewhere, b.Name)
	bind(held, a.Name)
	waiting := first
	if held.Name == first.Name {
		waiting = second
	}
	nominatedTo(t, waiting, a.Name)
}
