// Package runaway stops launch loops. When the simulator is wrong about a
// pod, because of something it cannot see (a scheduler plugin, a taint the
// node adds at boot, a wrong DaemonSet estimate), the pod stays pending on
// the node launched for it, and the next provisioning pass launches another
// node for it, and another: Karpenter's users report hundreds of nodes in a
// day for one pod.
//
// The Breaker notices the loop at the moment it would continue: provisioning
// wants a new node for a pod that already had one launched for it, that node
// registered, and the pod is still not bound. That is a miss for the pod's
// shape in that NodePool. After a miss, pods of the shape get no new node in
// that NodePool for a backoff that doubles with each consecutive miss (1, 2,
// 4 ... minutes, up to an hour); once it ends, one more launch is tried. A pod
// of the shape that binds resets the count.
//
// The Breaker is pure bookkeeping with an injected clock; the provisioner
// owns it and calls it from its single loop.
package runaway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Defaults for the backoff after consecutive misses.
const (
	DefaultBaseBackoff = time.Minute
	DefaultMaxBackoff  = time.Hour
)

// Key is what a backoff applies to: pods of one shape in one NodePool.
type Key struct {
	NodePool string
	Shape    string
}

// Miss is a launch that did not help: a node launched for the pod registered
// and the pod still waits.
type Miss struct {
	Key Key
	// Pod is the pod that waited.
	Pod types.NamespacedName
	// NodeClaim is the claim launched for it that registered.
	NodeClaim string
	// Misses counts the shape's consecutive misses, this one included.
	Misses int
	// Until is when launches for the shape may resume.
	Until time.Time
}

// Blocked is a pod that gets no new node because its shape is backing off.
type Blocked struct {
	Pod    *corev1.Pod
	Key    Key
	Misses int
	Until  time.Time
}

// Decision is the Breaker's answer for one planned NodeClaim.
type Decision struct {
	// Launch is false when every pod of the claim is blocked: the claim
	// would be launched only for pods a launch has not helped.
	Launch bool
	// Misses are the misses this decision discovered.
	Misses []Miss
	// Blocked are the claim's pods that are backing off.
	Blocked []Blocked
}

// ClaimState says what the cluster shows of a NodeClaim the Breaker tracks.
type ClaimState struct {
	Exists     bool
	Registered bool
}

// Breaker tracks launches per pod and backoffs per shape. It is safe for
// concurrent use.
type Breaker struct {
	clock clock.PassiveClock
	base  time.Duration
	max   time.Duration

	mu sync.Mutex
	// pods holds the pods a NodeClaim was launched for and that have not
	// bound yet.
	pods map[types.UID]*podRecord
	// claims holds what is known of each NodeClaim launched for a tracked pod.
	claims map[string]*claimRecord
	// shapes holds the backoff state per shape and NodePool.
	shapes map[Key]*shapeState
	// templateShapes caches the shape of pods made from one controller's
	// template revision, so that a 10,000-replica scale-out hashes once.
	templateShapes map[string]string
}

// maxTemplateShapes bounds templateShapes; the cache starts afresh past it.
const maxTemplateShapes = 4096

type podRecord struct {
	shape  string
	claims []string // launched for this pod, oldest first
}

type claimRecord struct {
	nodePool string
	// pods are the tracked pods the claim was launched for.
	pods       map[types.UID]struct{}
	registered bool
	// counted is set once a miss was recorded against the claim, so that
	// one unused node counts once however many passes see it.
	counted bool
}

type shapeState struct {
	misses   int
	until    time.Time
	lastMiss time.Time
}

// New returns a Breaker with the given backoff bounds (zero means default).
func New(clk clock.PassiveClock, base, maxBackoff time.Duration) *Breaker {
	if base <= 0 {
		base = DefaultBaseBackoff
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	return &Breaker{
		clock: clk, base: base, max: maxBackoff,
		pods: map[types.UID]*podRecord{}, claims: map[string]*claimRecord{}, shapes: map[Key]*shapeState{},
		templateShapes: map[string]string{},
	}
}

// Observe brings the Breaker up to date with the cluster: claim reports what
// the cluster shows of a tracked NodeClaim, pods are every pod the caller
// listed. A tracked pod that is gone stops being tracked; one that is bound
// proves its shape schedules, which resets the shape's backoff in the
// NodePools it was launched in. Claims that went away without registering
// (a failed launch) no longer count against anyone.
func (b *Breaker) Observe(claim func(name string) ClaimState, pods []*corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, c := range b.claims {
		state := claim(name)
		if state.Registered {
			c.registered = true
		}
		if !state.Exists && !c.registered {
			b.dropClaim(name)
		}
	}
	// proven holds the shapes, per NodePool, of which a pod bound.
	proven := map[Key]bool{}
	if len(b.pods) > 0 {
		seen := make(map[types.UID]*corev1.Pod, len(pods))
		for _, pod := range pods {
			if _, ok := b.pods[pod.UID]; ok {
				seen[pod.UID] = pod
			}
		}
		for uid, rec := range b.pods {
			pod, ok := seen[uid]
			switch {
			case !ok || pod.DeletionTimestamp != nil:
				b.forgetPod(uid)
			case pod.Spec.NodeName != "":
				for _, name := range rec.claims {
					if c := b.claims[name]; c != nil {
						key := Key{NodePool: c.nodePool, Shape: rec.shape}
						delete(b.shapes, key)
						proven[key] = true
					}
				}
				b.forgetPod(uid)
			}
		}
	}
	// Once a pod of a shape bound, nodes that initialized while other pods
	// of the shape waited were taken by their siblings (the scheduler picks
	// among equal pods as it likes), not refused: they do not count.
	for _, rec := range b.pods {
		if len(proven) == 0 {
			break
		}
		for _, name := range rec.claims {
			if c := b.claims[name]; c != nil && c.registered && proven[Key{NodePool: c.nodePool, Shape: rec.shape}] {
				c.counted = true
			}
		}
	}
	// Forget backoffs long past: a shape that has not missed for twice the
	// longest backoff starts afresh.
	now := b.clock.Now()
	for key, s := range b.shapes {
		if now.Sub(s.lastMiss) > 2*b.max {
			delete(b.shapes, key)
		}
	}
}

// Admit decides whether a NodeClaim planned in nodePool for pods should be
// launched. A pod that already had a node launched for it, which registered
// while the pod stayed pending, is a miss for its shape: the shape backs
// off. The claim is launched unless every one of its pods is backing off.
func (b *Breaker) Admit(nodePool string, pods []*corev1.Pod) Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	decision := Decision{}
	for _, pod := range pods {
		key := Key{NodePool: nodePool, Shape: b.shapeOf(pod)}
		if rec := b.pods[pod.UID]; rec != nil {
			for _, name := range rec.claims {
				c := b.claims[name]
				if c == nil || c.nodePool != nodePool || !c.registered || c.counted {
					continue
				}
				c.counted = true
				s := b.shapes[key]
				if s == nil {
					s = &shapeState{}
					b.shapes[key] = s
				}
				s.misses++
				s.lastMiss = now
				s.until = now.Add(b.backoff(s.misses))
				decision.Misses = append(decision.Misses, Miss{
					Key: key, Pod: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name},
					NodeClaim: name, Misses: s.misses, Until: s.until,
				})
			}
		}
		if s := b.shapes[key]; s != nil && now.Before(s.until) {
			decision.Blocked = append(decision.Blocked, Blocked{Pod: pod, Key: key, Misses: s.misses, Until: s.until})
		}
	}
	decision.Launch = len(decision.Blocked) < len(pods)
	return decision
}

// RecordLaunch notes that nodeClaim was created in nodePool for pods.
func (b *Breaker) RecordLaunch(nodeClaim, nodePool string, pods []*corev1.Pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := &claimRecord{nodePool: nodePool, pods: make(map[types.UID]struct{}, len(pods))}
	b.claims[nodeClaim] = c
	for _, pod := range pods {
		c.pods[pod.UID] = struct{}{}
		rec := b.pods[pod.UID]
		if rec == nil {
			rec = &podRecord{shape: b.shapeOf(pod)}
			b.pods[pod.UID] = rec
		}
		rec.claims = append(rec.claims, nodeClaim)
	}
}

// backoff is the wait after the n-th consecutive miss: base doubled n-1
// times, at most max.
func (b *Breaker) backoff(n int) time.Duration {
	d := b.base
	for i := 1; i < n && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}

// shapeOf returns a tracked pod's recorded shape, or computes it. Callers
// hold the lock.
func (b *Breaker) shapeOf(pod *corev1.Pod) string {
	if rec := b.pods[pod.UID]; rec != nil {
		return rec.shape
	}
	template := templateKey(pod)
	if template == "" {
		return Shape(pod)
	}
	if shape, ok := b.templateShapes[template]; ok {
		return shape
	}
	if len(b.templateShapes) >= maxTemplateShapes {
		clear(b.templateShapes)
	}
	shape := Shape(pod)
	b.templateShapes[template] = shape
	return shape
}

// templateKey names the controller template revision a pod was made from
// (its controller's UID and the revision hash label), or "" when it has
// none: such pods are alike in everything Shape reads.
func templateKey(pod *corev1.Pod) string {
	var owner types.UID
	for _, ref := range pod.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			owner = ref.UID
		}
	}
	if owner == "" {
		return ""
	}
	for _, label := range []string{"pod-template-hash", "controller-revision-hash"} {
		if hash := pod.Labels[label]; hash != "" {
			return string(owner) + "/" + hash
		}
	}
	return ""
}

// forgetPod stops tracking a pod and drops the claims only it kept. Callers
// hold the lock.
func (b *Breaker) forgetPod(uid types.UID) {
	rec := b.pods[uid]
	delete(b.pods, uid)
	if rec == nil {
		return
	}
	for _, name := range rec.claims {
		if c := b.claims[name]; c != nil {
			delete(c.pods, uid)
			if len(c.pods) == 0 {
				delete(b.claims, name)
			}
		}
	}
}

// dropClaim forgets a claim and removes it from its pods' lists. Callers
// hold the lock.
func (b *Breaker) dropClaim(name string) {
	c := b.claims[name]
	delete(b.claims, name)
	if c == nil {
		return
	}
	for uid := range c.pods {
		rec := b.pods[uid]
		if rec == nil {
			continue
		}
		kept := rec.claims[:0]
		for _, c := range rec.claims {
			if c != name {
				kept = append(kept, c)
			}
		}
		rec.claims = kept
	}
}

// shapeFields are the parts of a pod that decide where it can run: pods
// equal in all of them are placed alike by the simulator and the scheduler.
type shapeFields struct {
	Namespace         string                            `json:"ns"`
	Requests          []corev1.ResourceList             `json:"req"`
	InitRequests      []corev1.ResourceList             `json:"init,omitempty"`
	Overhead          corev1.ResourceList               `json:"overhead,omitempty"`
	NodeSelector      map[string]string                 `json:"nodeSelector,omitempty"`
	Affinity          *corev1.Affinity                  `json:"affinity,omitempty"`
	Tolerations       []corev1.Toleration               `json:"tolerations,omitempty"`
	TopologySpread    []corev1.TopologySpreadConstraint `json:"spread,omitempty"`
	HostPorts         []int32                           `json:"hostPorts,omitempty"`
	PriorityClassName string                            `json:"priorityClass,omitempty"`
	SchedulerName     string                            `json:"scheduler,omitempty"`
	RuntimeClassName  *string                           `json:"runtimeClass,omitempty"`
	Volumes           []string                          `json:"volumes,omitempty"`
	Labels            map[string]string                 `json:"labels,omitempty"`
}

// Shape is a short digest of what decides where a pod can run: its
// requests, selectors, affinities, tolerations, spread, host ports, volumes
// (by claim name) and labels without the ones that differ per replica.
func Shape(pod *corev1.Pod) string {
	f := shapeFields{
		Namespace: pod.Namespace, Overhead: pod.Spec.Overhead, NodeSelector: pod.Spec.NodeSelector,
		Affinity: pod.Spec.Affinity, Tolerations: pod.Spec.Tolerations, TopologySpread: pod.Spec.TopologySpreadConstraints,
		PriorityClassName: pod.Spec.PriorityClassName, SchedulerName: pod.Spec.SchedulerName, RuntimeClassName: pod.Spec.RuntimeClassName,
	}
	for _, c := range pod.Spec.Containers {
		f.Requests = append(f.Requests, c.Resources.Requests)
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				f.HostPorts = append(f.HostPorts, p.HostPort)
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		f.InitRequests = append(f.InitRequests, c.Resources.Requests)
	}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			f.Volumes = append(f.Volumes, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if len(pod.Labels) > 0 {
		f.Labels = make(map[string]string, len(pod.Labels))
		for k, v := range pod.Labels {
			if k != "pod-template-hash" && k != "controller-revision-hash" && k != "statefulset.kubernetes.io/pod-name" &&
				k != "apps.kubernetes.io/pod-index" && k != "batch.kubernetes.io/job-completion-index" {
				f.Labels[k] = v
			}
		}
	}
	raw, err := json.Marshal(f)
	if err != nil {
		// Every field is plain data; fall back to the pod itself so that a
		// surprise never merges two pods' shapes.
		return "pod-" + string(pod.UID)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:8])
}
