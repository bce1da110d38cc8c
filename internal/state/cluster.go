package state

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/daemonset"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// Cluster is the in-memory model. Its zero value is not usable; use NewCluster.
type Cluster struct {
	clock clock.PassiveClock

	mu sync.RWMutex
	// entries holds one stateEntry per machine, keyed by entryID.
	entries map[string]*stateEntry
	// nodeNames and claimNames index entries by Node and NodeClaim name.
	nodeNames  map[string]string
	claimNames map[string]string
	// podsByNode holds the non-terminal pods bound to each node name. It is
	// kept apart from entries so that a pod seen before its node still counts.
	podsByNode map[string]map[podKey]*corev1.Pod
	podNode    map[podKey]string
	daemonSets map[types.NamespacedName]*appsv1.DaemonSet
	// daemonSetPods holds, per DaemonSet, its newest pod seen (kept after
	// the pod goes, as the last admitted shape of its daemon), and
	// limitRanges the LimitRanges: DaemonSets() sizes daemons from them.
	daemonSetPods map[types.NamespacedName]*corev1.Pod
	limitRanges   map[types.NamespacedName]*corev1.LimitRange
	// intent is what the decisions intend (plans, hand-offs, nominations,
	// removals), kept apart from the objects above: see intents.
	intent intents
	// waiting holds the pods the model has seen unbound, not terminal and
	// not being deleted; only they make a machine count as nominated.
	waiting map[podKey]bool
	// created holds, per NodeClaim name, when this process created the
	// claim and recorded it before the informer delivered it (see
	// AddCreatedNodeClaim); the informer's first delivery clears it.
	created map[string]time.Time
	// apiReader reads the API server itself, not a cache: Synced asks it
	// whether a created claim the cache does not list still exists.
	apiReader client.Reader
}

// waitingHold is how far past the reading's clock a machine that holds
// waiting pods is reported nominated: long enough for a caller's own later
// clock reading to still fall inside it.
const waitingHold = time.Minute

// stateEntry is the stored form of a machine.Machine.
type stateEntry struct {
	node      *corev1.Node
	nodeClaim *v1.NodeClaim
}

// NewCluster returns an empty model.
func NewCluster(clk clock.PassiveClock) *Cluster {
	return &Cluster{
		clock:         clk,
		entries:       map[string]*stateEntry{},
		nodeNames:     map[string]string{},
		claimNames:    map[string]string{},
		podsByNode:    map[string]map[podKey]*corev1.Pod{},
		podNode:       map[podKey]string{},
		daemonSets:    map[types.NamespacedName]*appsv1.DaemonSet{},
		daemonSetPods: map[types.NamespacedName]*corev1.Pod{},
		limitRanges:   map[types.NamespacedName]*corev1.LimitRange{},
		intent:        newIntents(),
		waiting:       map[podKey]bool{},
		created:       map[string]time.Time{},
	}
}

// WithAPIReader gives the model an uncached reader of the API server and
// returns the model. Synced uses it to tell a claim the provisioner has
// just created and the cache has not delivered yet (it exists) from one
// deleted before the model saw it go (it does not). Without it Synced
// reports such claims as not synced until the informer delivers them.
// Call it before the model is shared.
func (c *Cluster) WithAPIReader(r client.Reader) *Cluster {
	c.apiReader = r
	return c
}

// entryID keys a machine by its provider ID once known, else by name.
func nodeEntryID(node *corev1.Node) string {
	if node.Spec.ProviderID != "" {
		return "pid/" + node.Spec.ProviderID
	}
	return "node/" + node.Name
}

func claimEntryID(nc *v1.NodeClaim) string {
	if nc.Status.ProviderID != "" {
		return "pid/" + nc.Status.ProviderID
	}
	return "nodeclaim/" + nc.Name
}

// UpdateNode records the latest version of a Node. Only informers call it.
func (c *Cluster) UpdateNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := nodeEntryID(node)
	if old, ok := c.nodeNames[node.Name]; ok && old != id {
		c.moveNode(old, id)
	}
	e := c.entry(id)
	e.node = node
	c.nodeNames[node.Name] = id
}

// DeleteNode forgets a Node. Only informers call it.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.intent.forgetMachine(name)
	id, ok := c.nodeNames[name]
	if !ok {
		return
	}
	delete(c.nodeNames, name)
	delete(c.podsByNode, name)
	if e := c.entries[id]; e != nil {
		e.node = nil
		if e.nodeClaim == nil {
			delete(c.entries, id)
		}
	}
}

// UpdateNodeClaim records the latest version of a NodeClaim. Only informers call it.
func (c *Cluster) UpdateNodeClaim(nc *v1.NodeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.created, nc.Name)
	id := claimEntryID(nc)
	if old, ok := c.claimNames[nc.Name]; ok && old != id {
		c.moveClaim(old, id)
	}
	e := c.entry(id)
	e.nodeClaim = nc
	c.claimNames[nc.Name] = id
}

// DeleteNodeClaim forgets a NodeClaim. Only informers call it.
func (c *Cluster) DeleteNodeClaim(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The provisioner records its plan and nomination as it creates the
	// claim, possibly before the informer delivers it: forget them even if
	// the model never held the claim.
	c.intent.forgetMachine(name)
	delete(c.created, name)
	c.removeClaim(name)
}

// removeClaim drops a NodeClaim name from the model. Callers hold the lock.
func (c *Cluster) removeClaim(name string) {
	id, ok := c.claimNames[name]
	if !ok {
		return
	}
	delete(c.claimNames, name)
	if e := c.entries[id]; e != nil {
		e.nodeClaim = nil
		if e.node == nil {
			delete(c.entries, id)
			c.intent.unmark(id)
		}
	}
}

// UpdatePod records a pod. Bound, not terminal pods count on their node; so
// do pending pods nominated to a node (status.nominatedNodeName), because the
// kube-scheduler keeps room for them there. Only informers call it.
func (c *Cluster) UpdatePod(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := keyOf(pod)
	c.unbind(key)
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil || terminal {
		c.intent.forgetPod(key)
		delete(c.waiting, key)
	} else {
		if !c.waiting[key] {
			// First seen waiting (in this process): its hand-off may
			// predate a restart.
			c.recoverHandOff(key, pod)
		}
		c.waiting[key] = true
	}
	if terminal {
		return
	}
	node := pod.Spec.NodeName
	if node == "" && pod.DeletionTimestamp == nil {
		node = pod.Status.NominatedNodeName
	}
	if node == "" {
		return
	}
	pods := c.podsByNode[node]
	if pods == nil {
		pods = map[podKey]*corev1.Pod{}
		c.podsByNode[node] = pods
	}
	pods[key] = pod
	c.podNode[key] = node
}

// DeletePod forgets a pod. Only informers call it.
func (c *Cluster) DeletePod(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unbind(key)
	c.intent.forgetPod(key)
	delete(c.waiting, key)
}

// AddCreatedNodeClaim records a NodeClaim the provisioner has just created,
// unless the model already holds it. Until the informer delivers it, the
// informer cache does not list it either, so a provisioning pass in between
// (Synced compares the model with that cache) would not see the claim and
// plan its pods again: a second node for the same pods, seen under load in
// CI. Karpenter records its new NodeClaims in its cluster state the same way.
func (c *Cluster) AddCreatedNodeClaim(nc *v1.NodeClaim) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.claimNames[nc.Name]; ok {
		return
	}
	id := claimEntryID(nc)
	c.entry(id).nodeClaim = nc
	c.claimNames[nc.Name] = id
	c.created[nc.Name] = c.clock.Now()
}

// ForgetUnconfirmedNodeClaims drops the claims AddCreatedNodeClaim recorded
// that the informer has not delivered within maxAge: such a claim was most
// likely deleted before the informer saw it (a relist in between), and
// would otherwise hold room that does not exist.
func (c *Cluster) ForgetUnconfirmedNodeClaims(maxAge time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for name, at := range c.created {
		if now.Sub(at) >= maxAge {
			c.dropCreated(name)
		}
	}
}

// dropCreated forgets a claim AddCreatedNodeClaim recorded, with what was
// intended for it. Callers hold the lock.
func (c *Cluster) dropCreated(name string) {
	delete(c.created, name)
	c.intent.forgetMachine(name)
	c.removeClaim(name)
}

// UpdateDaemonSet records a daemonset. Only informers call it.
func (c *Cluster) UpdateDaemonSet(ds *appsv1.DaemonSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.daemonSets[client.ObjectKeyFromObject(ds)] = ds
}

// DeleteDaemonSet forgets a daemonset. Only informers call it.
func (c *Cluster) DeleteDaemonSet(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.daemonSets, key)
	delete(c.daemonSetPods, key)
}

func (c *Cluster) unbind(key podKey) {
	if node, ok := c.podNode[key]; ok {
		delete(c.podsByNode[node], key)
		if len(c.podsByNode[node]) == 0 {
			delete(c.podsByNode, node)
		}
		delete(c.podNode, key)
	}
}

func (c *Cluster) entry(id string) *stateEntry {
	e := c.entries[id]
	if e == nil {
		e = &stateEntry{}
		c.entries[id] = e
	}
	return e
}

// moveNode moves the node of entry from to entry to (its provider ID appeared).
func (c *Cluster) moveNode(from, to string) {
	if e := c.entries[from]; e != nil {
		if e.nodeClaim == nil {
			delete(c.entries, from)
		} else {
			e.node = nil
		}
	}
}

// moveClaim moves the claim of entry from to entry to (it was launched).
func (c *Cluster) moveClaim(from, to string) {
	if e := c.entries[from]; e != nil {
		if e.node == nil {
			delete(c.entries, from)
		} else {
			e.nodeClaim = nil
		}
	}
	c.intent.moveMark(from, to)
}

func (c *Cluster) idOf(providerIDOrName string) string {
	if id, ok := c.claimNames[providerIDOrName]; ok {
		return id
	}
	if id, ok := c.nodeNames[providerIDOrName]; ok {
		return id
	}
	return "pid/" + providerIDOrName
}

// HasNode reports whether a Node of that name is in the model.
func (c *Cluster) HasNode(name string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.nodeNames[name]
	return ok
}

// Nodes returns a copy of every machine in the model, sorted by name.
func (c *Cluster) Nodes() []*machine.Machine {
	c.mu.RLock()
	defer c.mu.RUnlock()
	pairs := c.unlinkedPairs()
	paired := make(map[string]bool, len(pairs))
	for _, claimID := range pairs {
		paired[claimID] = true
	}
	awaited := c.awaitedMachines()
	nodes := make([]*machine.Machine, 0, len(c.entries))
	for id, e := range c.entries {
		if paired[id] {
			continue
		}
		n := c.stateNode(id, e, awaited)
		if claimID, ok := pairs[id]; ok {
			n.NodeClaim = c.entries[claimID].nodeClaim
			n.MarkedForDeletion = n.MarkedForDeletion || c.intent.marked[claimID] || n.Deleting()
			n.NominatedUntil = c.nominatedUntil(n.Node, n.NodeClaim, awaited)
		}
		nodes = append(nodes, n)
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name() < nodes[j].Name() })
	return nodes
}

// unlinkedPairs finds registered Nodes whose NodeClaim the model holds
// without a providerID yet: the Node and NodeClaim informers deliver at
// their own pace, so the Node's registration (which made the claim its
// owner) can arrive before the claim's status. Such a pair is one machine.
// It maps the Node's entry to the claim's. Callers hold the lock.
func (c *Cluster) unlinkedPairs() map[string]string {
	var pairs map[string]string
	for id, e := range c.entries {
		if e.node == nil || e.nodeClaim != nil {
			continue
		}
		for _, ref := range e.node.OwnerReferences {
			if ref.Kind != "NodeClaim" || ref.APIVersion != v1.SchemeGroupVersion.String() {
				continue
			}
			claimID, ok := c.claimNames[ref.Name]
			if !ok {
				continue
			}
			if ce := c.entries[claimID]; ce != nil && ce.node == nil && ce.nodeClaim != nil && ce.nodeClaim.Status.ProviderID == "" {
				if pairs == nil {
					pairs = map[string]string{}
				}
				pairs[id] = claimID
			}
		}
	}
	return pairs
}

// NodeForProviderID returns the machine with that provider ID, if known.
func (c *Cluster) NodeForProviderID(providerID string) (*machine.Machine, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id := "pid/" + providerID
	e, ok := c.entries[id]
	if !ok {
		return nil, false
	}
	return c.stateNode(id, e, c.awaitedMachines()), true
}

// DaemonSets returns the known daemonsets, sorted by namespace and name,
// each with the pod template a new node's daemon pod would have
// (daemonset.Sized): the containers of its newest pod of the current
// template when one was seen, else the template with its namespace's
// LimitRange defaults. The simulator sizes new nodes' overhead from them.
func (c *Cluster) DaemonSets() []*appsv1.DaemonSet {
	c.mu.RLock()
	defer c.mu.RUnlock()
	keys := slices.SortedFunc(maps.Keys(c.daemonSets), func(a, b types.NamespacedName) int {
		if a.Namespace != b.Namespace {
			return compare(a.Namespace, b.Namespace)
		}
		return compare(a.Name, b.Name)
	})
	out := make([]*appsv1.DaemonSet, 0, len(keys))
	ranges := slices.SortedFunc(maps.Values(c.limitRanges), func(a, b *corev1.LimitRange) int {
		return compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, k := range keys {
		out = append(out, daemonset.Sized(c.daemonSets[k], c.daemonSetPods[k], ranges))
	}
	return out
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// stateNode builds the read-only view of an entry. Callers hold the lock.
func (c *Cluster) stateNode(id string, e *stateEntry, awaited map[string]bool) *machine.Machine {
	n := &machine.Machine{Node: e.node, NodeClaim: e.nodeClaim}
	n.MarkedForDeletion = c.intent.marked[id] || n.Deleting()
	if e.node != nil {
		pods := c.podsByNode[e.node.Name]
		n.Pods = make([]*corev1.Pod, 0, len(pods))
		for _, p := range pods {
			n.Pods = append(n.Pods, p)
		}
		sort.Slice(n.Pods, func(i, j int) bool {
			a, b := n.Pods[i], n.Pods[j]
			return a.Namespace < b.Namespace || (a.Namespace == b.Namespace && a.Name < b.Name)
		})
	}
	n.NominatedUntil = c.nominatedUntil(e.node, e.nodeClaim, awaited)
	return n
}

// Synced reports whether the model holds exactly the NodeClaims and Nodes
// the (cached) reader holds, with the same provider IDs, apart from claims
// the provisioner has just created that the reader does not list yet but
// the API server still holds. Controllers take no decision while it is
// false. Both directions matter: a claim the model lacks would have its
// pods planned again, and a claim the model still holds after it was
// deleted would offer room that no longer exists, so pending pods would
// get no NodeClaim in that pass.
func (c *Cluster) Synced(ctx context.Context, reader client.Reader) (bool, error) {
	// Read in place, not copied: only names and provider IDs are compared.
	claims := &v1.NodeClaimList{}
	if err := reader.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodeclaims: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := reader.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodes: %w", err)
	}
	synced, unlisted := c.compare(claims.Items, nodes.Items)
	if !synced {
		return false, nil
	}
	// The cache lags the API server both ways: an unlisted claim the
	// provisioner created is either not delivered yet (it exists) or was
	// deleted before the informer's removal reached the model (it does
	// not: the cache dropped it before the model's reconciler ran).
	if len(unlisted) > 0 && c.apiReader == nil {
		return false, nil
	}
	for _, name := range unlisted {
		// Metadata only: whether it exists is all that matters.
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(v1.SchemeGroupVersion.WithKind("NodeClaim"))
		err := c.apiReader.Get(ctx, client.ObjectKey{Name: name}, meta)
		if apierrors.IsNotFound(err) {
			// Deleted: forget it now rather than at ForgetUnconfirmedNodeClaims'
			// deadline (its informer may never report it, if a relist missed
			// both its creation and its deletion). The next call sees the
			// model without it.
			c.forgetCreated(name)
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading created nodeclaim %s: %w", name, err)
		}
	}
	return true, nil
}

// forgetCreated drops a claim AddCreatedNodeClaim recorded that is gone
// from the API server, unless the informer has delivered it since (then the
// informer's own delete handles it).
func (c *Cluster) forgetCreated(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.created[name]; ok {
		c.dropCreated(name)
	}
}

// compare reports whether the model holds every listed claim and node
// (same provider IDs) and nothing else but created claims, and returns
// those created claims that are not listed.
func (c *Cluster) compare(claims []v1.NodeClaim, nodes []corev1.Node) (bool, []string) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i := range claims {
		id, ok := c.claimNames[claims[i].Name]
		if !ok || id != claimEntryID(&claims[i]) {
			return false, nil
		}
	}
	for i := range nodes {
		id, ok := c.nodeNames[nodes[i].Name]
		if !ok || id != nodeEntryID(&nodes[i]) {
			return false, nil
		}
	}
	// Every listed object is in the model; equal counts mean nothing else is.
	if len(c.nodeNames) != len(nodes) {
		return false, nil
	}
	extra := len(c.claimNames) - len(claims)
	if extra == 0 {
		return true, nil
	}
	listed := make(map[string]bool, len(claims))
	for i := range claims {
		listed[claims[i].Name] = true
	}
	var unlisted []string
	for name := range c.created {
		if _, held := c.claimNames[name]; held && !listed[name] {
			unlisted = append(unlisted, name)
		}
	}
	if extra > len(unlisted) {
		return false, nil
	}
	return true, unlisted
}

// podKey identifies a pod.
type podKey = types.NamespacedName

func keyOf(pod *corev1.Pod) podKey { return podKey{Namespace: pod.Namespace, Name: pod.Name} }
