package provisioning

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// standInMarker is part of a stand-in's UID. A pass simulates stand-ins
// for the replicas a ReplicaSet has yet to create; they exist only in the
// pass's memory: they size the NodeClaims it launches, and nothing about
// them (a plan, a nomination, an event, a metric) is recorded or written.
// The API server assigns every real pod's UID, so no real pod carries the
// marker.
const standInMarker = "/anticipated-"

// IsAnticipated reports whether pod is a stand-in for a replica not
// created yet.
func IsAnticipated(pod *corev1.Pod) bool {
	return strings.Contains(string(pod.UID), standInMarker)
}

// maxStandIns bounds the stand-ins of one pass, so that a mistaken
// spec.replicas (a runaway autoscaler's maximum) cannot make one pass
// simulate and launch for an unbounded number of pods; NodePool limits
// bound the launch too.
const maxStandIns = 10000

// anticipationHold is how long, at most, the NodeClaims launched for a
// ReplicaSet's replicas, real or stand-in, stay nominated (kept from
// disruption) while its replicas are still to be created or bound: the
// kube-controller-manager took 100 s to create 10,000 replicas on the local
// control plane and the kube-scheduler another 30-60 s to bind the last,
// longer than the provisioner's nomination window; until then the claims
// look under-used to consolidation. Once every replica is bound, the claims
// keep only the window, so drift and expiration are not held up.
const anticipationHold = 5 * time.Minute

// anticipation remembers which ReplicaSets a pass has anticipated, so that
// each (ReplicaSet, replica count) is anticipated once.
//
// The kube-controller-manager creates a scaled-up ReplicaSet's pods in
// slow-start batches (1, 2, 4, ... at a time), and on a busy API server
// 5,000 replicas took it 25 s. Once the kube-scheduler has failed one of
// them, the rest will need the same room: a pass sizes its NodeClaims for
// spec.replicas at once, standing in for the missing replicas with copies
// of the failed one, and the replicas created later go onto the room those
// claims have left (the model sees it as free, since no stand-in is
// planned onto it).
//
// Remembering the count is what keeps this from becoming a launch loop: if
// the replicas never come (a ResourceQuota refuses them, the ReplicaSet is
// scaled back), the empty claims are consolidated and the count is not
// anticipated again. A ReplicaSet whose ReplicaFailure condition is True
// (the controller could not create pods) is not anticipated at all.
type anticipation struct {
	mu sync.Mutex
	// done is, per ReplicaSet UID, the replica count last anticipated.
	done map[types.UID]int32
	// held is, per ReplicaSet UID, the NodeClaims launched for its
	// replicas with its stand-ins, kept nominated while its replicas are
	// still to be created or bound.
	held map[types.UID]*holding
}

// holding is the NodeClaims of the plan that anticipated one ReplicaSet
// that hold one of its replicas, stand-in or real.
type holding struct {
	claims []string
	since  time.Time
}

func newAnticipation() *anticipation {
	return &anticipation{done: map[types.UID]int32{}, held: map[types.UID]*holding{}}
}

// hold records that claim was launched, in a plan that anticipated the
// ReplicaSet with that UID, for one of its replicas (stand-in or real).
func (a *anticipation) hold(rs types.UID, claim string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.held[rs]
	if h == nil {
		h = &holding{since: now}
		a.held[rs] = h
	}
	h.claims = append(h.claims, claim)
}

// standInOwners are the ReplicaSets (by UID) of the stand-ins among pods.
func standInOwners(pods []*corev1.Pod) []types.UID {
	var out []types.UID
	for _, pod := range pods {
		if !IsAnticipated(pod) {
			continue
		}
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && !slices.Contains(out, ref.UID) {
			out = append(out, ref.UID)
		}
	}
	return out
}

// heldFor are the ReplicaSets among anticipated (by UID) that own one of
// pods, a stand-in or a real replica. A plan sized for a ReplicaSet's
// missing replicas holds every claim that has any of its replicas, not
// only those with stand-ins: the kube-scheduler binds a real replica onto
// whichever of them has room first, so the claim planned for it may be
// the one left empty for the replicas to come.
func heldFor(pods []*corev1.Pod, anticipated map[types.UID]bool) []types.UID {
	var out []types.UID
	for _, pod := range pods {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && anticipated[ref.UID] && !slices.Contains(out, ref.UID) {
			out = append(out, ref.UID)
		}
	}
	return out
}

// standIns returns stand-ins for the replicas not created yet of each
// ReplicaSet that has a pod the kube-scheduler marked unschedulable (and
// not nominated), unless the same replica count was anticipated before;
// at most maxStandIns in all. It also returns the NodeClaims still held:
// those of ReplicaSets whose replicas are still to be created or bound,
// for at most anticipationHold. sets and pods are read, never written.
func (a *anticipation) standIns(sets []appsv1.ReplicaSet, pods []*corev1.Pod, now time.Time) (standIns []*corev1.Pod, held []string) {
	active := map[types.UID]int32{}
	unbound := map[types.UID]int32{}      // active pods not bound to a node yet
	marked := map[types.UID]*corev1.Pod{} // a pod the scheduler could not place
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.APIVersion != "apps/v1" || ref.Kind != "ReplicaSet" {
			continue
		}
		// The ReplicaSet controller counts the pods that are neither
		// terminating nor finished, and replaces the others.
		if pod.DeletionTimestamp != nil || podutil.IsTerminal(pod) {
			continue
		}
		active[ref.UID]++
		if pod.Spec.NodeName == "" {
			unbound[ref.UID]++
		}
		if marked[ref.UID] == nil && podutil.IsProvisionable(pod) {
			marked[ref.UID] = pod
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	live := make(map[types.UID]bool, len(sets))
	waiting := make(map[types.UID]bool, len(sets)) // still to create replicas
	landing := make(map[types.UID]bool, len(sets)) // or to bind some
	var out []*corev1.Pod
	for i := range sets {
		rs := &sets[i]
		live[rs.UID] = true
		want := ptr.Deref(rs.Spec.Replicas, 1)
		if rs.DeletionTimestamp == nil && !replicaFailure(rs) {
			waiting[rs.UID] = active[rs.UID] < want
			landing[rs.UID] = waiting[rs.UID] || unbound[rs.UID] > 0
		}
		if done, ok := a.done[rs.UID]; ok && want < done {
			a.done[rs.UID] = want // scaled down: a later scale-up is new
		}
		model := marked[rs.UID]
		missing := min(int(want-active[rs.UID]), maxStandIns-len(out))
		if model == nil || missing <= 0 || !waiting[rs.UID] || a.done[rs.UID] >= want {
			continue
		}
		a.done[rs.UID] = want
		out = append(out, standInsFor(rs, model, missing)...)
	}
	maps.DeleteFunc(a.done, func(uid types.UID, _ int32) bool { return !live[uid] })
	maps.DeleteFunc(a.held, func(uid types.UID, h *holding) bool {
		return !landing[uid] || now.Sub(h.since) >= anticipationHold
	})
	for _, h := range a.held {
		held = append(held, h.claims...)
	}
	// A claim with replicas of two anticipated ReplicaSets is held by both.
	slices.Sort(held)
	return out, slices.Compact(held)
}

// standInsFor returns n stand-ins copied from model, a pod of rs: the same
// labels, annotations, owner and spec (one copy, shared by all n, since
// the simulation never writes a pod), a name and UID no real pod has, and
// no status.
func standInsFor(rs *appsv1.ReplicaSet, model *corev1.Pod, n int) []*corev1.Pod {
	shared := model.DeepCopy()
	out := make([]*corev1.Pod, 0, n)
	for i := range n {
		pod := &corev1.Pod{TypeMeta: shared.TypeMeta, Spec: shared.Spec}
		pod.ObjectMeta = metav1.ObjectMeta{
			// A ReplicaSet names its pods with a five-character suffix, so
			// no real pod takes these names.
			Name:            fmt.Sprintf("%s-anticipated-%d", rs.Name, i),
			Namespace:       shared.Namespace,
			UID:             types.UID(fmt.Sprintf("%s%s%d", rs.UID, standInMarker, i)),
			Labels:          shared.Labels,
			Annotations:     shared.Annotations,
			OwnerReferences: shared.OwnerReferences,
		}
		out = append(out, pod)
	}
	return out
}

// replicaFailure reports whether the ReplicaSet's controller failed to
// create or delete pods (a ResourceQuota, an admission webhook).
func replicaFailure(rs *appsv1.ReplicaSet) bool {
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// realPods are the pods that exist, without the stand-ins.
func realPods(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		if !IsAnticipated(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// deferredOf marks the stand-ins among pods, for Snapshot.Deferred: the
// simulation places them after every pod that exists.
func deferredOf(pods []*corev1.Pod) map[types.UID]bool {
	var out map[types.UID]bool
	for _, pod := range pods {
		if IsAnticipated(pod) {
			if out == nil {
				out = map[types.UID]bool{}
			}
			out[pod.UID] = true
		}
	}
	return out
}
