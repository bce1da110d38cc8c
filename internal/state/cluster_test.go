package state

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func claim(name, providerID string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"small", "large"}},
			}},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		},
		Status: v1.NodeClaimStatus{ProviderID: providerID},
	}
}

func node(name, providerID string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
}

func pod(name, nodeName string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: nodeName}, Status: corev1.PodStatus{Phase: phase}}
}

// summary is what a test checks about each machine.
type summary struct {
	Name     string
	HasNode  bool
	HasClaim bool
	Pods     []string
	Marked   bool
}

func summarize(c *Cluster) []summary {
	var out []summary
	for _, n := range c.Nodes() {
		s := summary{Name: n.Name(), HasNode: n.Node != nil, HasClaim: n.NodeClaim != nil, Marked: n.MarkedForDeletion}
		for _, p := range n.Pods {
			s.Pods = append(s.Pods, p.Name)
		}
		out = append(out, s)
	}
	return out
}

func TestClusterBookkeeping(t *testing.T) {
	cases := map[string]struct {
		steps []func(c *Cluster)
		want  []summary
	}{
		"in-flight claim": {
			steps: []func(*Cluster){func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "")) }},
			want:  []summary{{Name: "nc-1", HasClaim: true}},
		},
		"claim launched, then its node registers": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "")) },
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "kwok://a")) },
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
			},
			want: []summary{{Name: "node-a", HasNode: true, HasClaim: true}},
		},
		"node seen before its claim": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "kwok://a")) },
			},
			want: []summary{{Name: "node-a", HasNode: true, HasClaim: true}},
		},
		"node gets its provider id later": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "kwok://a")) },
				func(c *Cluster) { c.UpdateNode(node("node-a", "")) },
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
			},
			want: []summary{{Name: "node-a", HasNode: true, HasClaim: true}},
		},
		"pods bound before their node is known, terminal pods ignored": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdatePod(pod("p1", "node-a", corev1.PodRunning)) },
				func(c *Cluster) { c.UpdatePod(pod("p2", "node-a", corev1.PodSucceeded)) },
				func(c *Cluster) { c.UpdatePod(pod("p3", "", corev1.PodPending)) },
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
			},
			want: []summary{{Name: "node-a", HasNode: true, Pods: []string{"p1"}}},
		},
		"pod moves and is deleted": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
				func(c *Cluster) { c.UpdateNode(node("node-b", "kwok://b")) },
				func(c *Cluster) { c.UpdatePod(pod("p1", "node-a", corev1.PodRunning)) },
				func(c *Cluster) { c.UpdatePod(pod("p2", "node-a", corev1.PodRunning)) },
				func(c *Cluster) { c.UpdatePod(pod("p1", "node-b", corev1.PodRunning)) },
				func(c *Cluster) { c.DeletePod(types.NamespacedName{Namespace: "ns", Name: "p2"}) },
			},
			want: []summary{{Name: "node-a", HasNode: true}, {Name: "node-b", HasNode: true, Pods: []string{"p1"}}},
		},
		"a pending pod nominated to a node counts there, until it is deleted or bound elsewhere": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
				func(c *Cluster) { c.UpdateNode(node("node-b", "kwok://b")) },
				func(c *Cluster) {
					p := pod("p1", "", corev1.PodPending)
					p.Status.NominatedNodeName = "node-a"
					c.UpdatePod(p)
				},
				func(c *Cluster) {
					p := pod("p2", "", corev1.PodPending)
					p.Status.NominatedNodeName = "node-a"
					now := metav1.Now()
					p.DeletionTimestamp = &now
					c.UpdatePod(p)
				},
				func(c *Cluster) {
					p := pod("p3", "node-b", corev1.PodRunning)
					p.Status.NominatedNodeName = "node-a"
					c.UpdatePod(p)
				},
			},
			want: []summary{{Name: "node-a", HasNode: true, Pods: []string{"p1"}}, {Name: "node-b", HasNode: true, Pods: []string{"p3"}}},
		},
		"node deleted keeps its claim; claim deleted removes the machine": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "kwok://a")) },
				func(c *Cluster) { c.UpdateNode(node("node-a", "kwok://a")) },
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-2", "kwok://b")) },
				func(c *Cluster) { c.DeleteNode("node-a") },
				func(c *Cluster) { c.DeleteNodeClaim("nc-2") },
			},
			want: []summary{{Name: "nc-1", HasClaim: true}},
		},
		"marks follow the claim when it is launched, and can be undone": {
			steps: []func(*Cluster){
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "")) },
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-2", "")) },
				func(c *Cluster) { c.MarkForDeletion("nc-1", "nc-2") },
				func(c *Cluster) { c.UpdateNodeClaim(claim("nc-1", "kwok://a")) },
				func(c *Cluster) { c.UnmarkForDeletion("nc-2") },
			},
			want: []summary{{Name: "nc-1", HasClaim: true, Marked: true}, {Name: "nc-2", HasClaim: true}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Now()))
			for _, step := range tc.steps {
				step(c)
			}
			if diff := cmp.Diff(tc.want, summarize(c)); diff != "" {
				t.Errorf("model mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInFlightClaimView(t *testing.T) {
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	c.UpdateNodeClaim(claim("nc-1", ""))
	n := c.Nodes()[0]
	if !n.InFlight() || n.Initialized() {
		t.Errorf("in-flight claim: InFlight=%v Initialized=%v", n.InFlight(), n.Initialized())
	}
	if got := n.Labels()[corev1.LabelTopologyZone]; got != "zone-a" {
		t.Errorf("single-valued zone requirement not a label: %q", got)
	}
	if _, ok := n.Labels()[corev1.LabelInstanceTypeStable]; ok {
		t.Error("multi-valued instance-type requirement became a label")
	}
	if got := n.Allocatable()[corev1.ResourceCPU]; got.String() != "1" {
		t.Errorf("unlaunched claim allocatable cpu = %s, want its requests (1)", got.String())
	}
}

// TestHandOff: a handed-off pod names the machine it is planned onto until
// its plan, its pod or its machine changes; the machine is found under its
// NodeClaim's name and its Node's (another name, as on AWS).
func TestHandOff(t *testing.T) {
	p := types.NamespacedName{Namespace: "ns", Name: "p"}
	cases := map[string]struct {
		after  func(c *Cluster)
		wantOn string // "" = no hand-off
	}{
		"claim launched":          {wantOn: "nc-1"},
		"planned again elsewhere": {after: func(c *Cluster) { c.PlanPods("nc-2", []types.NamespacedName{p}) }},
		"planned again, handed off again": {after: func(c *Cluster) {
			c.PlanPods("ip-1", []types.NamespacedName{p})
			c.HandOff([]types.NamespacedName{p})
		}, wantOn: "ip-1"},
		"pod bound":             {after: func(c *Cluster) { c.UpdatePod(pod("p", "ip-1", corev1.PodRunning)) }},
		"pod deleted":           {after: func(c *Cluster) { c.DeletePod(p) }},
		"claim deleted":         {after: func(c *Cluster) { c.DeleteNodeClaim("nc-1") }},
		"machine being removed": {after: func(c *Cluster) { c.MarkForDeletion("aws:///i-1") }},
		"pod planned nowhere":   {after: func(c *Cluster) { c.PlanPods("", []types.NamespacedName{p}) }},
		"node registered":       {after: func(c *Cluster) { c.UpdateNode(node("ip-1", "aws:///i-1")) }, wantOn: "nc-1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Now()))
			c.UpdatePod(pod("p", "", corev1.PodPending))
			c.PlanPods("nc-1", []types.NamespacedName{p})
			c.HandOff([]types.NamespacedName{p})
			c.UpdateNodeClaim(claim("nc-1", "aws:///i-1"))
			if tc.after != nil {
				tc.after(c)
			}
			got, ok := c.HandOffTarget(p)
			if (tc.wantOn != "") != ok || got != tc.wantOn {
				t.Errorf("HandOffTarget = %q, %v; want %q", got, ok, tc.wantOn)
			}
			var want []types.NamespacedName
			if tc.wantOn != "" {
				want = []types.NamespacedName{p}
			}
			if diff := cmp.Diff(want, c.HandedOffTo("ip-1", "nc-1")); diff != "" {
				t.Errorf("HandedOffTo(ip-1, nc-1) mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHandOffNeedsAPlan: HandOff ignores pods that no plan put anywhere,
// and pods the model has not seen waiting.
func TestHandOffNeedsAPlan(t *testing.T) {
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	unplanned := types.NamespacedName{Namespace: "ns", Name: "unplanned"}
	unseen := types.NamespacedName{Namespace: "ns", Name: "unseen"}
	c.UpdatePod(pod("unplanned", "", corev1.PodPending))
	c.UpdateNode(node("node-a", "kwok://a"))
	c.PlanPods("node-a", []types.NamespacedName{unseen})
	c.HandOff([]types.NamespacedName{unplanned, unseen})
	for _, key := range []types.NamespacedName{unplanned, unseen} {
		if got, ok := c.HandOffTarget(key); ok {
			t.Errorf("%s handed off to %q", key, got)
		}
	}
	if !c.HasNode("node-a") || c.HasNode("node-b") {
		t.Errorf("HasNode(node-a)=%v HasNode(node-b)=%v", c.HasNode("node-a"), c.HasNode("node-b"))
	}
}

func TestNomination(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCluster(clk)
	c.UpdateNode(node("node-a", "kwok://a"))
	c.NominateNodeForPod("node-a", 20*time.Second)
	if got, want := c.Nodes()[0].NominatedUntil, clk.Now().Add(20*time.Second); !got.Equal(want) {
		t.Errorf("NominatedUntil = %v, want %v", got, want)
	}
}

// TestSnapshotCountsAnUnlinkedLaunchOnce: a controller restart can leave a
// Node the provider created while its NodeClaim's status never got the
// providerID. Until the lifecycle controller links them, the machine must
// reach the simulator once, as the in-flight claim, not also as a tainted
// Node of the same name that would hide the claim's room.
func TestSnapshotCountsAnUnlinkedLaunchOnce(t *testing.T) {
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	c.UpdateNodeClaim(claim("nc-1", ""))
	unregistered := node("nc-1", "kwok://nc-1")
	unregistered.Spec.Taints = []corev1.Taint{{Key: v1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}}
	c.UpdateNode(unregistered)
	c.UpdateNode(node("unmanaged", "kwok://unmanaged"))

	if got := len(c.Nodes()); got != 3 {
		t.Fatalf("model holds %d machines, want 3 (claim, its unlinked node, an unmanaged node)", got)
	}
	snapshot := c.Snapshot(nil, nil)
	var got []string
	for _, n := range snapshot.Nodes {
		got = append(got, fmt.Sprintf("%s inFlight=%v", n.Name, n.InFlight))
	}
	want := []string{"nc-1 inFlight=true", "unmanaged inFlight=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("snapshot nodes (-want +got):\n%s", diff)
	}

	// Once the claim records the providerID, the two are one registered machine.
	c.UpdateNodeClaim(claim("nc-1", "kwok://nc-1"))
	linked := c.Snapshot(nil, nil)
	if len(linked.Nodes) != 2 || linked.Nodes[0].Name != "nc-1" || linked.Nodes[0].InFlight {
		t.Errorf("after linking: %+v", linked.Nodes)
	}
}

// TestRegisteredNodePairsWithItsUnlinkedClaim: the Node informer can deliver
// a registered Node (owned by its NodeClaim) before the NodeClaim informer
// delivers the claim's providerID; the model shows one machine, not two.
func TestRegisteredNodePairsWithItsUnlinkedClaim(t *testing.T) {
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	c.UpdateNodeClaim(claim("nc-1", ""))
	registered := node("ip-10-0-0-1", "aws:///zone-a/i-1")
	registered.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: "nc-1"}}
	c.UpdateNode(registered)
	c.UpdatePod(pod("p", "ip-10-0-0-1", corev1.PodRunning))
	c.MarkForDeletion("nc-1")

	want := []summary{{Name: "ip-10-0-0-1", HasNode: true, HasClaim: true, Pods: []string{"p"}, Marked: true}}
	if diff := cmp.Diff(want, summarize(c)); diff != "" {
		t.Errorf("machines (-want +got):\n%s", diff)
	}
	// The claim's providerID arrives: the same single machine.
	c.UpdateNodeClaim(claim("nc-1", "aws:///zone-a/i-1"))
	if diff := cmp.Diff(want, summarize(c)); diff != "" {
		t.Errorf("machines after linking (-want +got):\n%s", diff)
	}
}

// TestNominationFollowsTheMachine checks that a nomination made under a
// NodeClaim's name (a new claim) or a Node's name (an existing node) is seen
// on the machine whatever its Node is called (the AWS provider's nodes are
// named ip-…, its claims default-…), and is forgotten when the machine goes,
// registered or not.
func TestNominationFollowsTheMachine(t *testing.T) {
	const (
		claimName  = "default-abcde"
		nodeName   = "ip-10-0-1-2.ec2.internal"
		providerID = "aws:///zone-a/i-0123"
	)
	window := 20 * time.Second
	cases := map[string]struct {
		// steps drive the model after the nomination; wantUntil is whether
		// the machine is nominated afterwards, wantKept how many nominations
		// the model still holds.
		steps     func(c *Cluster)
		nominate  string
		wantUntil bool
		wantKept  int
	}{
		"claim nominated before the informer saw it, then launched and registered": {
			nominate: claimName,
			steps: func(c *Cluster) {
				c.UpdateNodeClaim(claim(claimName, ""))
				c.UpdateNodeClaim(claim(claimName, providerID))
				c.UpdateNode(node(nodeName, providerID))
			},
			wantUntil: true, wantKept: 1,
		},
		"registered node nominated by its node name": {
			nominate: nodeName,
			steps: func(c *Cluster) {
				c.UpdateNodeClaim(claim(claimName, providerID))
				c.UpdateNode(node(nodeName, providerID))
			},
			wantUntil: true, wantKept: 1,
		},
		"claim that never registers is deleted": {
			nominate: claimName,
			steps: func(c *Cluster) {
				c.UpdateNodeClaim(claim(claimName, providerID))
				c.DeleteNodeClaim(claimName)
			},
			wantKept: 0,
		},
		"claim deleted before the informer saw it": {
			nominate: claimName,
			steps:    func(c *Cluster) { c.DeleteNodeClaim(claimName) },
			wantKept: 0,
		},
		"registered machine goes, node first": {
			nominate: claimName,
			steps: func(c *Cluster) {
				c.UpdateNodeClaim(claim(claimName, providerID))
				c.UpdateNode(node(nodeName, providerID))
				c.DeleteNode(nodeName)
				c.DeleteNodeClaim(claimName)
			},
			wantKept: 0,
		},
		"registered machine nominated by node name goes, claim first": {
			nominate: nodeName,
			steps: func(c *Cluster) {
				c.UpdateNodeClaim(claim(claimName, providerID))
				c.UpdateNode(node(nodeName, providerID))
				c.DeleteNodeClaim(claimName)
				c.DeleteNode(nodeName)
			},
			wantKept: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			c := NewCluster(clk)
			c.NominateNodeForPod(tc.nominate, window)
			tc.steps(c)
			if tc.wantUntil {
				nodes := c.Nodes()
				if len(nodes) != 1 {
					t.Fatalf("model holds %d machines, want 1", len(nodes))
				}
				if got, want := nodes[0].NominatedUntil, clk.Now().Add(window); !got.Equal(want) {
					t.Errorf("NominatedUntil = %v, want %v", got, want)
				}
			}
			if got := len(c.intent.nominated); got != tc.wantKept {
				t.Errorf("model holds %d nominations, want %d: %v", got, tc.wantKept, c.intent.nominated)
			}
		})
	}
}

// TestExpiredNominationsAreForgotten checks that nominations of names the
// model never sees go away once they expire.
func TestExpiredNominationsAreForgotten(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCluster(clk)
	c.NominateNodeForPod("never-seen", 20*time.Second)
	clk.Step(time.Minute)
	c.NominateNodeForPod("node-a", 20*time.Second)
	if _, ok := c.intent.nominated["never-seen"]; ok || len(c.intent.nominated) != 1 {
		t.Errorf("nominations %v, want only node-a's", c.intent.nominated)
	}
}

// TestCreatedNodeClaims: a claim the provisioner created is in the model at
// once (before the informer delivers it); the informer's version replaces
// it and confirms it; one the informer never delivers is forgotten after
// the maximum age; a claim the model already holds is not overwritten.
func TestCreatedNodeClaims(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCluster(clk)
	names := func() []string {
		var out []string
		for _, n := range c.Nodes() {
			out = append(out, n.Name())
		}
		sort.Strings(out)
		return out
	}
	c.AddCreatedNodeClaim(claim("confirmed", ""))
	c.AddCreatedNodeClaim(claim("ghost", ""))
	if got := names(); !slices.Equal(got, []string{"confirmed", "ghost"}) {
		t.Fatalf("model holds %v, want both created claims at once", got)
	}
	launched := claim("confirmed", "fake://1")
	c.UpdateNodeClaim(launched)
	c.AddCreatedNodeClaim(claim("confirmed", "")) // a late duplicate call must not roll the informer's version back
	for _, n := range c.Nodes() {
		if n.NodeClaim.Name == "confirmed" && n.NodeClaim.Status.ProviderID != "fake://1" {
			t.Errorf("the informer's version was overwritten: provider ID %q", n.NodeClaim.Status.ProviderID)
		}
	}
	clk.Step(time.Minute)
	c.ForgetUnconfirmedNodeClaims(2 * time.Minute)
	if got := names(); !slices.Equal(got, []string{"confirmed", "ghost"}) {
		t.Fatalf("after 1 minute the model holds %v, want both", got)
	}
	clk.Step(time.Minute)
	c.ForgetUnconfirmedNodeClaims(2 * time.Minute)
	if got := names(); !slices.Equal(got, []string{"confirmed"}) {
		t.Errorf("after 2 minutes the model holds %v, want only the confirmed claim", got)
	}
}

// TestHandOffRecoveredAfterRestart: a fresh model (a restarted controller)
// rebuilds the hand-off of a waiting pod whose nomination Dovetail wrote, as
// its managed fields record, and not of one another writer nominated.
func TestHandOffRecoveredAfterRestart(t *testing.T) {
	nominated := func(name, manager string) *corev1.Pod {
		p := pod(name, "", corev1.PodPending)
		p.Status.NominatedNodeName = "node-a"
		p.ManagedFields = []metav1.ManagedFieldsEntry{{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:nominatedNodeName":{}}}`),
		}}
		return p
	}
	cases := map[string]struct {
		pod    *corev1.Pod
		wantOn string
	}{
		"nominated by Dovetail":      {pod: nominated("ours", FieldManager), wantOn: "node-a"},
		"nominated by the scheduler": {pod: nominated("preempting", "kube-scheduler")},
		"no nomination":              {pod: pod("plain", "", corev1.PodPending)},
		"bound since":                {pod: func() *corev1.Pod { p := nominated("bound", FieldManager); p.Spec.NodeName = "node-a"; return p }()},
		"other fields by Dovetail": {pod: func() *corev1.Pod {
			p := nominated("other", FieldManager)
			p.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{"f:status":{"f:phase":{}}}`)
			return p
		}()},
		"unreadable managed fields": {pod: func() *corev1.Pod {
			p := nominated("garbled", FieldManager)
			p.ManagedFields[0].FieldsV1 = metav1.NewFieldsV1(`{`)
			return p
		}()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := NewCluster(clocktesting.NewFakeClock(time.Now()))
			c.UpdateNode(node("node-a", "kwok://a"))
			c.UpdatePod(tc.pod)
			got, ok := c.HandOffTarget(types.NamespacedName{Namespace: tc.pod.Namespace, Name: tc.pod.Name})
			if (tc.wantOn != "") != ok || got != tc.wantOn {
				t.Errorf("HandOffTarget = %q, %v; want %q", got, ok, tc.wantOn)
			}
		})
	}
	// A plan this process dropped is not brought back by the pod's next
	// update: only a pod first seen waiting is recovered.
	dropped := NewCluster(clocktesting.NewFakeClock(time.Now()))
	ours := nominated("dropped", FieldManager)
	dropped.UpdatePod(ours)
	dropped.PlanPods("", []types.NamespacedName{{Namespace: ours.Namespace, Name: ours.Name}})
	dropped.UpdatePod(ours.DeepCopy())
	if got, ok := dropped.HandOffTarget(types.NamespacedName{Namespace: ours.Namespace, Name: ours.Name}); ok {
		t.Errorf("a dropped plan came back as a hand-off to %q on the pod's next update", got)
	}
	// A plan the model holds is not replaced by the recovered one.
	c := NewCluster(clocktesting.NewFakeClock(time.Now()))
	p := nominated("replanned", FieldManager)
	c.UpdatePod(pod("replanned", "", corev1.PodPending))
	c.PlanPods("node-b", []types.NamespacedName{{Namespace: p.Namespace, Name: p.Name}})
	c.UpdatePod(p)
	if got, ok := c.HandOffTarget(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}); ok {
		t.Errorf("a recovered hand-off to %q replaced the model's plan", got)
	}
}

// mustStrip applies the cache's transform.
func mustStrip(t *testing.T, obj any) any {
	t.Helper()
	out, err := StripManagedFields(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStripManagedFields: the cache keeps, of a pod's managed fields, only
// Dovetail's status entry, so a pod it nominated is still known as such
// after the transform; other objects keep none, and a ReplicaSet no pod
// template.
func TestStripManagedFields(t *testing.T) {
	entry := func(manager, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: subresource,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:nominatedNodeName":{}}}`)}
	}
	p := pod("p", "", corev1.PodPending)
	p.ManagedFields = []metav1.ManagedFieldsEntry{entry("kube-controller-manager", ""), entry("kube-scheduler", "status"), entry(FieldManager, "status")}
	out, err := StripManagedFields(p)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if len(got.ManagedFields) != 1 || got.ManagedFields[0].Manager != FieldManager || !NominatedByDovetail(got) {
		t.Errorf("pod managed fields %+v, want only Dovetail's status entry", got.ManagedFields)
	}
	n := node("n", "kwok://n")
	n.ManagedFields = []metav1.ManagedFieldsEntry{entry(FieldManager, "status")}
	if out, _ := StripManagedFields(n); len(out.(*corev1.Node).ManagedFields) != 0 {
		t.Errorf("node kept managed fields %+v", out.(*corev1.Node).ManagedFields)
	}
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(3)),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}}}
	rs.ManagedFields = []metav1.ManagedFieldsEntry{entry("kube-controller-manager", "")}
	if got := mustStrip(t, rs).(*appsv1.ReplicaSet); len(got.Spec.Template.Spec.Containers) != 0 || len(got.ManagedFields) != 0 || *got.Spec.Replicas != 3 {
		t.Errorf("replicaset after the transform: template %+v, managed fields %+v, replicas %d; want no template or managed fields, 3 replicas",
			got.Spec.Template, got.ManagedFields, *got.Spec.Replicas)
	}
	if out, err := StripManagedFields("not an object"); err != nil || out != "not an object" {
		t.Errorf("StripManagedFields(string) = %v, %v", out, err)
	}
}
