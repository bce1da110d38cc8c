package state

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// intents is what Dovetail's decisions intend and the API server does not
// show yet, kept in one place apart from the objects the informers
// deliver: the pods each provisioning pass planned onto a machine and which
// of them are handed to the kube-scheduler, until when each machine counts
// as nominated, and the machines disruption commands are removing. Each is
// keyed by what it is about (a pod, a machine's name, a machine's entry)
// and cleared when that goes (forgetPod, forgetMachine, unmark). After a
// restart it is rebuilt from what the API server holds: hand-offs from the
// pods' nominations Dovetail wrote (recoverHandOff), removals by the
// disrupter's recovery of its commands, which marks their machines again.
// The Cluster's lock guards it; provisioning and disruption write it only
// through the Cluster's methods below.
type intents struct {
	// marked holds the entry IDs of the machines disruption chose to remove.
	marked map[string]bool
	// nominated holds, per name given to NominateNodeForPod, when its latest
	// nomination expires. The name is a NodeClaim's (a machine being
	// launched) or a Node's (an existing one); the two differ on providers
	// that name nodes themselves (AWS: ip-…), so a machine's nomination is
	// the later of its claim's and its node's, and each is forgotten when the
	// object of that name goes, or when it expires.
	nominated map[string]time.Time
	// plans holds, per pod the latest provisioning pass planned onto a
	// machine (by Node or NodeClaim name) and that has not bound since, that
	// plan. Such a machine counts as nominated for as long as the pod waits,
	// however long the kube-scheduler takes to bind it: removing it would
	// send the pod back to provisioning for a new node.
	plans map[podKey]plan
	// refused holds, per waiting pod, the Nodes its hand-off gave up on
	// (see RefuseHandOff). Provisioning plans the pod elsewhere; a pod
	// planned onto a node the scheduler will not give it would otherwise
	// wait there forever. Unlike the rest, refusals are not rebuilt after
	// a restart: a restarted controller may try such a node once more.
	refused map[podKey]refusal
	// listeners are told of each HandOff (see OnHandOff).
	listeners []func([]types.NamespacedName)
}

// refusal is the Nodes a pod's hand-off gave up on, for the pod with that
// UID (a pod recreated under the same name starts afresh).
type refusal struct {
	uid   types.UID
	nodes map[string]bool
}

// plan is where a pod was planned, and whether the plan is handed to the
// kube-scheduler (the pod is to be nominated to the machine's Node).
type plan struct {
	machine string
	handOff bool
}

func newIntents() intents {
	return intents{marked: map[string]bool{}, nominated: map[string]time.Time{}, plans: map[podKey]plan{},
		refused: map[podKey]refusal{}}
}

// forgetPod drops a pod's plan and refusals: it bound, finished or went.
func (in *intents) forgetPod(key podKey) {
	delete(in.plans, key)
	delete(in.refused, key)
}

// forgetMachine drops what was intended for a machine name that is gone (a
// NodeClaim or Node deleted): its nomination, and the plans of the pods
// waiting on it, so that they count nowhere until the next provisioning
// pass plans them again.
func (in *intents) forgetMachine(name string) {
	delete(in.nominated, name)
	maps.DeleteFunc(in.plans, func(_ podKey, p plan) bool { return p.machine == name })
	for key, r := range in.refused {
		if r.nodes[name] {
			delete(r.nodes, name)
			if len(r.nodes) == 0 {
				delete(in.refused, key)
			}
		}
	}
}

// unmark forgets that a machine entry is being removed.
func (in *intents) unmark(id string) { delete(in.marked, id) }

// moveMark carries a removal over when a machine's entry ID changes (its
// claim was launched and now has a provider ID).
func (in *intents) moveMark(from, to string) {
	if in.marked[from] {
		delete(in.marked, from)
		in.marked[to] = true
	}
}

// recoverHandOff rebuilds, from what the API server holds, the hand-off of
// a pod first seen waiting whose nomination Dovetail wrote (its field
// manager is FieldManager) when the model has no plan for it: after a
// restart, the pods still waiting on the nodes planned for them keep those
// nodes nominated and keep their nomination. Only at first sight: a plan
// this process dropped since (the pass could not place the pod, or its
// machine went) stays dropped. Callers hold the lock.
func (c *Cluster) recoverHandOff(key podKey, pod *corev1.Pod) {
	node := pod.Status.NominatedNodeName
	if node == "" {
		return
	}
	if _, planned := c.intent.plans[key]; planned || !NominatedByDovetail(pod) {
		return
	}
	c.intent.plans[key] = plan{machine: node, handOff: true}
}

// FieldManager is the field manager (the REST client's user agent) of
// Dovetail's writes, by which the pods' nominations it wrote are known
// after a restart.
const FieldManager = "dovetail"

// StripManagedFields is the informer cache's transform: it drops the
// managed fields of every cached object (they are most of a pod's size and
// nothing reads them), except, on pods, the entry of Dovetail's own status
// writes, which NominatedByDovetail reads after a restart, and a
// ReplicaSet's pod template, which nothing reads either.
func StripManagedFields(in any) (any, error) {
	if rs, ok := in.(*appsv1.ReplicaSet); ok {
		// Only a ReplicaSet's replica counts and conditions are read (a
		// pass's stand-ins copy a pod, not the template).
		rs.Spec.Template = corev1.PodTemplateSpec{}
	}
	if pod, ok := in.(*corev1.Pod); ok {
		var kept []metav1.ManagedFieldsEntry
		for _, entry := range pod.ManagedFields {
			if entry.Manager == FieldManager && entry.Subresource == "status" {
				kept = append(kept, entry)
			}
		}
		pod.ManagedFields = kept
		return pod, nil
	}
	if obj, err := meta.Accessor(in); err == nil && obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	return in, nil
}

// NominatedByDovetail reports whether the pod's status.nominatedNodeName
// was last written by Dovetail, as its managed fields record.
func NominatedByDovetail(pod *corev1.Pod) bool {
	for _, entry := range pod.ManagedFields {
		if entry.Manager != FieldManager || entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		if _, ok := fields.Status["f:nominatedNodeName"]; ok {
			return true
		}
	}
	return false
}

// MarkForDeletion marks the machines with these provider IDs (or, before
// launch, NodeClaim names) as being removed by a disruption command: nothing
// is placed on them and their pods are rescheduled in simulations.
func (c *Cluster) MarkForDeletion(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.intent.marked[c.idOf(id)] = true
	}
}

// UnmarkForDeletion undoes MarkForDeletion (a disruption command was rolled back).
func (c *Cluster) UnmarkForDeletion(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		c.intent.unmark(c.idOf(id))
	}
}

// NominateNodeForPod records that a pod is expected to land on the machine
// named by a Node name or, for a machine being launched, a NodeClaim name; the
// machine is not disrupted until the nomination expires. Expired nominations
// are forgotten here, so names the model never sees do not accumulate.
func (c *Cluster) NominateNodeForPod(name string, window time.Duration) {
	c.NominateNodesForPods([]string{name}, window)
}

// NominateNodesForPods is NominateNodeForPod for several machines at once,
// under one lock and one sweep of the expired nominations: a pass
// nominates a machine per placement, thousands at 10,000 pods.
func (c *Cluster) NominateNodesForPods(names []string, window time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	maps.DeleteFunc(c.intent.nominated, func(_ string, until time.Time) bool { return !until.After(now) })
	for _, name := range names {
		c.intent.nominated[name] = now.Add(window)
	}
}

// nominatedUntil is when the latest nomination of the machine with this Node
// and NodeClaim (either may be nil) expires; awaited holds the names of the
// machines planned pods still wait on (see awaitedMachines). Callers hold
// the lock.
func (c *Cluster) nominatedUntil(node *corev1.Node, nc *v1.NodeClaim, awaited map[string]bool) time.Time {
	var until time.Time
	if node != nil {
		until = c.intent.nominated[node.Name]
	}
	if nc != nil {
		if t := c.intent.nominated[nc.Name]; t.After(until) {
			until = t
		}
	}
	if (node != nil && awaited[node.Name]) || (nc != nil && awaited[nc.Name]) {
		if t := c.clock.Now().Add(waitingHold); t.After(until) {
			until = t
		}
	}
	return until
}

// awaitedMachines returns the Node or NodeClaim names that a pod planned
// onto them still waits to bind to. Built once per read of the model, so
// that reading N machines costs one pass over the waiting pods, not N.
// Callers hold the lock.
func (c *Cluster) awaitedMachines() map[string]bool {
	awaited := map[string]bool{}
	for key, p := range c.intent.plans {
		if c.waiting[key] {
			awaited[p.machine] = true
		}
	}
	return awaited
}

// PlanPods records that the latest provisioning pass planned these pending
// pods onto the machine of that Node or NodeClaim name, replacing where an
// earlier pass had planned them. Until a pod binds, is deleted or finishes,
// or the machine goes, the machine counts as nominated (machine.Machine.NominatedUntil),
// so that disruption does not remove a node that pods are waiting for while
// the kube-scheduler is slow to bind them. An empty name forgets the pods'
// plan (the pass could not place them). A pod's hand-off (HandOff) lasts
// only for the plan it was given with: a new plan without it ends it.
func (c *Cluster) PlanPods(name string, pods []types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, key := range pods {
		if name == "" {
			delete(c.intent.plans, key)
			continue
		}
		c.intent.plans[key] = plan{machine: name}
	}
}

// HandOff marks pods already planned (PlanPods) as handed to the
// kube-scheduler: HandOffTarget names the machine each should be nominated to.
// The provisioner hands off the pods of passes where placement matters
// (several workloads), where the scheduler's own choice could leave
// planned machines half empty and other pods without room.
func (c *Cluster) HandOff(pods []types.NamespacedName) {
	c.mu.Lock()
	handed := make([]types.NamespacedName, 0, len(pods))
	for _, key := range pods {
		if p, planned := c.intent.plans[key]; planned && c.waiting[key] {
			p.handOff = true
			c.intent.plans[key] = p
			handed = append(handed, key)
		}
	}
	listeners := slices.Clone(c.intent.listeners)
	c.mu.Unlock()
	if len(handed) == 0 {
		return
	}
	for _, fn := range listeners {
		fn(handed)
	}
}

// OnHandOff registers fn to be told, outside the model's lock, of the pods
// each HandOff hands to the scheduler: a pod planned onto a Node that is
// already there has no Node event to wake whoever nominates it. fn must
// not block.
func (c *Cluster) OnHandOff(fn func([]types.NamespacedName)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.intent.listeners = append(c.intent.listeners, fn)
}

// HandOffTarget returns the name of the machine (a Node's or, for a
// machine being launched, its NodeClaim's) a handed-off pod is planned
// onto; ok is false when the pod has no hand-off or its machine is being
// removed. The caller finds the machine's Node itself, in its own cache:
// this model may see the Node later than the caller does.
func (c *Cluster) HandOffTarget(pod types.NamespacedName) (machine string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p := c.intent.plans[pod]
	if !p.handOff || !c.waiting[pod] {
		return "", false
	}
	name := p.machine
	if id, found := c.machineID(name); found && c.intent.marked[id] {
		return "", false
	}
	return name, true
}

// PlannedLaunch returns the NodeClaim the latest provisioning pass planned
// a waiting pod onto, when that claim is still being launched: the model
// holds it, its Node has not registered and it is not being removed. Such a
// pod waits for its machine; the kube-scheduler marking it unschedulable
// meanwhile needs no new pass. A pod planned onto a Node (room the
// scheduler then did not find), onto a claim the model no longer holds, or
// not planned at all, gives ok false.
func (c *Cluster) PlannedLaunch(pod types.NamespacedName) (claim string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	p, planned := c.intent.plans[pod]
	if !planned || !c.waiting[pod] {
		return "", false
	}
	id, found := c.claimNames[p.machine]
	if !found || c.intent.marked[id] {
		return "", false
	}
	if e := c.entries[id]; e == nil || e.node != nil {
		return "", false
	}
	return p.machine, true
}

// RefuseHandOff records that the hand-off of a waiting pod to a Node gave
// up: the kube-scheduler did not bind it there (it cleared the
// nomination again and again), or the node no longer has the room. The
// pod's plan onto machine (the Node's or its NodeClaim's name, as
// HandOffTarget gave it) is dropped, so it no longer keeps that machine
// nominated or counts as handed off; a newer plan is left alone.
// Provisioning does not plan the pod onto that Node again (Refused) until
// the pod binds or goes, or the Node goes.
func (c *Cluster) RefuseHandOff(pod *corev1.Pod, machine, node string) {
	key := keyOf(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waiting[key] {
		return
	}
	if p, planned := c.intent.plans[key]; planned && p.machine == machine {
		delete(c.intent.plans, key)
	}
	r := c.intent.refused[key]
	if r.uid != pod.UID || r.nodes == nil {
		r = refusal{uid: pod.UID, nodes: map[string]bool{}}
		c.intent.refused[key] = r
	}
	r.nodes[node] = true
}

// Refused returns, for each of these pods that has any, the Nodes its
// hand-off gave up on (RefuseHandOff), sorted, keyed by the pod's UID: the
// simulation places the pod elsewhere.
func (c *Cluster) Refused(pods []*corev1.Pod) map[types.UID][]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if len(c.intent.refused) == 0 {
		return nil
	}
	out := map[types.UID][]string{}
	for _, pod := range pods {
		if r, ok := c.intent.refused[keyOf(pod)]; ok && r.uid == pod.UID && len(r.nodes) > 0 {
			out[pod.UID] = slices.Sorted(maps.Keys(r.nodes))
		}
	}
	return out
}

// HandedOffTo returns the handed-off pods planned onto a machine under any
// of these names (a Node's and its NodeClaim's), so that a Node's arrival
// can nominate them.
func (c *Cluster) HandedOffTo(names ...string) []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	on := map[string]bool{}
	for _, name := range names {
		if id, found := c.machineID(name); found && c.intent.marked[id] {
			continue
		}
		on[name] = true
	}
	var out []types.NamespacedName
	for key, p := range c.intent.plans {
		if p.handOff && c.waiting[key] && on[p.machine] {
			out = append(out, key)
		}
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// machineID resolves a Node or NodeClaim name to its machine's entry ID.
// Callers hold the lock.
func (c *Cluster) machineID(name string) (string, bool) {
	if id, ok := c.nodeNames[name]; ok {
		return id, true
	}
	id, ok := c.claimNames[name]
	return id, ok
}
