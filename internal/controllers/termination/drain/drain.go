package drain

import (
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Group orders the pods of a draining node. A group is evicted only once every
// pod of the groups before it is gone, so that critical pods (DNS, CNI,
// logging) outlive the workloads that need them, as the kubelet's graceful
// node shutdown does.
type Group int

// The drain groups, in the order they are evicted.
const (
	NonCriticalNonDaemon Group = iota
	NonCriticalDaemon
	CriticalNonDaemon
	CriticalDaemon
)

// String names the group for logs and messages.
func (g Group) String() string {
	switch g {
	case NonCriticalNonDaemon:
		return "non-critical"
	case NonCriticalDaemon:
		return "non-critical daemon"
	case CriticalNonDaemon:
		return "critical"
	case CriticalDaemon:
		return "critical daemon"
	default:
		return "unknown"
	}
}

// StuckTerminatingAfter is how long past its deletion deadline a terminating
// pod is still waited for. After that the pod's kubelet is presumed gone and
// the pod no longer holds up the drain.
const StuckTerminatingAfter = time.Minute

// DefaultTerminationGracePeriod is what the API server defaults
// pod.spec.terminationGracePeriodSeconds to; used when it is unset.
const DefaultTerminationGracePeriod = 30 * time.Second

// Critical priority classes. Pods using them are drained after all others.
const (
	SystemClusterCritical = podutil.SystemClusterCritical
	SystemNodeCritical    = podutil.SystemNodeCritical
)

// GroupOf returns the drain group of a pod.
func GroupOf(pod *corev1.Pod) Group {
	switch critical, daemon := podutil.IsCritical(pod), podutil.IsOwnedByDaemonSet(pod); {
	case critical && daemon:
		return CriticalDaemon
	case critical:
		return CriticalNonDaemon
	case daemon:
		return NonCriticalDaemon
	default:
		return NonCriticalNonDaemon
	}
}

// IsTerminating reports whether the pod has been deleted and is shutting down.
func IsTerminating(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil
}

// IsStuckTerminating reports whether the pod has been terminating for more
// than StuckTerminatingAfter past its deletion deadline.
func IsStuckTerminating(pod *corev1.Pod, now time.Time) bool {
	return IsTerminating(pod) && now.After(pod.DeletionTimestamp.Add(StuckTerminatingAfter))
}

// IsDrainable reports whether draining the node has to remove this pod: it is
// not a mirror pod, does not tolerate the disrupted taint and is not stuck
// terminating. Pods with do-not-disrupt are drainable: the drain waits for
// them even though it does not evict them.
func IsDrainable(pod *corev1.Pod, now time.Time) bool {
	return !podutil.IsMirror(pod) && !podutil.ToleratesDisruptedTaint(pod) && !IsStuckTerminating(pod, now)
}

// IsWaiting reports whether the drain still waits for the pod to go away.
func IsWaiting(pod *corev1.Pod, now time.Time) bool {
	return !podutil.IsTerminal(pod) && IsDrainable(pod, now)
}

// TerminationGracePeriod returns the pod's terminationGracePeriodSeconds.
func TerminationGracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds == nil {
		return DefaultTerminationGracePeriod
	}
	return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
}

// DeleteTime is when a pod must be deleted so that its full grace period ends
// by the node's termination deadline.
func DeleteTime(pod *corev1.Pod, terminationTime time.Time) time.Time {
	return terminationTime.Add(-TerminationGracePeriod(pod))
}

// GracePeriodSeconds is the grace period to delete a pod with at now so that
// it ends by terminationTime: the whole seconds left, at least 1 (the
// deadline has passed: let the kubelet stop the pod rather than force-delete
// it), and never more than the pod's own terminationGracePeriodSeconds.
func GracePeriodSeconds(pod *corev1.Pod, terminationTime, now time.Time) int64 {
	left := int64(math.Floor(terminationTime.Sub(now).Seconds()))
	left = max(left, 1)
	return min(left, int64(TerminationGracePeriod(pod)/time.Second))
}

// Deletion is a pod to delete directly with the given grace period.
type Deletion struct {
	Pod                *corev1.Pod
	GracePeriodSeconds int64
}

// Plan is what to do next for the pods of one draining node.
type Plan struct {
	// Waiting are the pods the drain still waits for, ordered by group.
	Waiting []*corev1.Pod
	// Group is the group being drained: that of the first waiting pod.
	Group Group
	// Evict are the pods of Group to evict through the Eviction API now.
	Evict []*corev1.Pod
	// Delete are the pods to delete now, bypassing PDBs and do-not-disrupt,
	// because the node's termination deadline is close.
	Delete []Deletion
	// Protected are the waiting pods that are not evicted because of an
	// active do-not-disrupt annotation.
	Protected []*corev1.Pod
	// NextCheck is the earliest future instant at which the plan changes
	// even if no pod does (a deletion falls due, a terminating pod becomes
	// stuck, a do-not-disrupt duration lapses); zero if there is none.
	NextCheck time.Time
}

// Drained reports whether no pod is left to wait for.
func (p Plan) Drained() bool { return len(p.Waiting) == 0 }

// NewPlan computes the plan for the pods of a node at now. terminationTime is
// the node's termination deadline (from the NodeClaim's
// terminationGracePeriod), or nil when it has none.
func NewPlan(pods []*corev1.Pod, now time.Time, terminationTime *time.Time) Plan {
	var p Plan
	later := func(t time.Time) {
		if t.After(now) && (p.NextCheck.IsZero() || t.Before(p.NextCheck)) {
			p.NextCheck = t
		}
	}
	deleting := map[*corev1.Pod]bool{}
	for _, pod := range pods {
		if !IsWaiting(pod, now) {
			continue
		}
		p.Waiting = append(p.Waiting, pod)
		if IsTerminating(pod) {
			later(pod.DeletionTimestamp.Add(StuckTerminatingAfter).Add(time.Second))
		}
		if terminationTime == nil {
			continue
		}
		grace := GracePeriodSeconds(pod, *terminationTime, now)
		switch {
		case !IsTerminating(pod) && !now.Before(DeleteTime(pod, *terminationTime)):
			// 1. Its full grace period would not end before the node goes.
		case IsTerminating(pod) && pod.DeletionTimestamp.After(*terminationTime) &&
			pod.DeletionTimestamp.After(now.Add(time.Duration(grace)*time.Second)):
			// 2. It was deleted with a grace period that outlives the node:
			// shorten it. The API server only ever shortens a grace period,
			// and the second test stops this from repeating.
		default:
			if !IsTerminating(pod) {
				later(DeleteTime(pod, *terminationTime))
			}
			continue
		}
		deleting[pod] = true
		p.Delete = append(p.Delete, Deletion{Pod: pod, GracePeriodSeconds: grace})
	}
	slices.SortStableFunc(p.Waiting, func(a, b *corev1.Pod) int { return int(GroupOf(a)) - int(GroupOf(b)) })
	if len(p.Waiting) == 0 {
		return p
	}
	p.Group = GroupOf(p.Waiting[0])
	for _, pod := range p.Waiting {
		protection := podutil.DoNotDisrupt(pod, now)
		if protection.Active {
			p.Protected = append(p.Protected, pod)
			if !protection.Until.IsZero() {
				later(protection.Until)
			}
		}
		if GroupOf(pod) != p.Group || IsTerminating(pod) || protection.Active || deleting[pod] {
			continue
		}
		p.Evict = append(p.Evict, pod)
	}
	return p
}
