package drain_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/drain"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// podWrapper builds test pods fluently.
type podWrapper struct{ corev1.Pod }

func makePod(name string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (p *podWrapper) daemon() *podWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds"})
	return p
}

func (p *podWrapper) priorityClass(name string) *podWrapper {
	p.Spec.PriorityClassName = name
	return p
}

func (p *podWrapper) mirror() *podWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node", UID: "node"})
	return p
}

func (p *podWrapper) annotate(key, value string) *podWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[key] = value
	return p
}

func (p *podWrapper) toleration(t corev1.Toleration) *podWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

func (p *podWrapper) phase(phase corev1.PodPhase) *podWrapper {
	p.Status.Phase = phase
	return p
}

func (p *podWrapper) started(at time.Time) *podWrapper {
	p.Status.StartTime = &metav1.Time{Time: at}
	return p
}

// deleted marks the pod terminating with the given deletion deadline.
func (p *podWrapper) deleted(deadline time.Time) *podWrapper {
	p.DeletionTimestamp = &metav1.Time{Time: deadline}
	return p
}

func (p *podWrapper) grace(d time.Duration) *podWrapper {
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(d / time.Second))
	return p
}

func (p *podWrapper) obj() *corev1.Pod { return &p.Pod }

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestGroupOf(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want drain.Group
	}{
		"plain pod":              {pod: makePod("p").obj(), want: drain.NonCriticalNonDaemon},
		"daemonset pod":          {pod: makePod("p").daemon().obj(), want: drain.NonCriticalDaemon},
		"cluster-critical pod":   {pod: makePod("p").priorityClass(drain.SystemClusterCritical).obj(), want: drain.CriticalNonDaemon},
		"node-critical pod":      {pod: makePod("p").priorityClass(drain.SystemNodeCritical).obj(), want: drain.CriticalNonDaemon},
		"critical daemonset pod": {pod: makePod("p").priorityClass(drain.SystemNodeCritical).daemon().obj(), want: drain.CriticalDaemon},
		"other priority class":   {pod: makePod("p").priorityClass("high").obj(), want: drain.NonCriticalNonDaemon},
		"owned by a non-apps daemonset": {pod: func() *corev1.Pod {
			p := makePod("p").obj()
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "DaemonSet", Name: "x"}}
			return p
		}(), want: drain.NonCriticalNonDaemon},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := drain.GroupOf(tc.pod); got != tc.want {
				t.Errorf("GroupOf() = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestIsWaiting(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running pod":                     {pod: makePod("p").obj(), want: true},
		"pending pod":                     {pod: makePod("p").phase(corev1.PodPending).obj(), want: true},
		"succeeded pod":                   {pod: makePod("p").phase(corev1.PodSucceeded).obj(), want: false},
		"failed pod":                      {pod: makePod("p").phase(corev1.PodFailed).obj(), want: false},
		"mirror pod (owner)":              {pod: makePod("p").mirror().obj(), want: false},
		"mirror pod (annotation)":         {pod: makePod("p").annotate(corev1.MirrorPodAnnotationKey, "x").obj(), want: false},
		"tolerates the disrupted taint":   {pod: makePod("p").toleration(corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}).obj(), want: false},
		"tolerates everything":            {pod: makePod("p").toleration(corev1.Toleration{Operator: corev1.TolerationOpExists}).obj(), want: false},
		"tolerates all NoSchedule":        {pod: makePod("p").toleration(corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).obj(), want: false},
		"tolerates only NoExecute":        {pod: makePod("p").toleration(corev1.Toleration{Key: v1.DisruptedTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}).obj(), want: true},
		"tolerates another taint":         {pod: makePod("p").toleration(corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}).obj(), want: true},
		"terminating within its deadline": {pod: makePod("p").deleted(now.Add(10 * time.Second)).obj(), want: true},
		"terminating, deadline just past": {pod: makePod("p").deleted(now.Add(-30 * time.Second)).obj(), want: true},
		"stuck terminating":               {pod: makePod("p").deleted(now.Add(-61 * time.Second)).obj(), want: false},
		"do-not-disrupt pod":              {pod: makePod("p").annotate(v1.DoNotDisruptAnnotationKey, "true").obj(), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := drain.IsWaiting(tc.pod, now); got != tc.want {
				t.Errorf("IsWaiting() = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestGracePeriodSeconds(t *testing.T) {
	deadline := now.Add(10 * time.Minute)
	cases := map[string]struct {
		pod        *corev1.Pod
		now        time.Time
		wantDelete time.Time
		wantGrace  int64
	}{
		"long grace, deadline close": {pod: makePod("p").grace(time.Hour).obj(), now: now, wantDelete: deadline.Add(-time.Hour), wantGrace: 600},
		"short grace, at its delete time": {
			pod: makePod("p").grace(30 * time.Second).obj(), now: deadline.Add(-30 * time.Second), wantDelete: deadline.Add(-30 * time.Second), wantGrace: 30,
		},
		"fractional seconds left round down": {pod: makePod("p").grace(time.Hour).obj(), now: deadline.Add(-1500 * time.Millisecond), wantDelete: deadline.Add(-time.Hour), wantGrace: 1},
		"deadline passed: at least 1 s":      {pod: makePod("p").grace(time.Hour).obj(), now: deadline.Add(time.Minute), wantDelete: deadline.Add(-time.Hour), wantGrace: 1},
		"zero grace stays zero":              {pod: makePod("p").grace(0).obj(), now: deadline.Add(time.Minute), wantDelete: deadline, wantGrace: 0},
		"unset grace defaults to 30 s": {pod: func() *corev1.Pod {
			p := makePod("p").obj()
			p.Spec.TerminationGracePeriodSeconds = nil
			return p
		}(), now: now, wantDelete: deadline.Add(-30 * time.Second), wantGrace: 30},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := drain.DeleteTime(tc.pod, deadline); !got.Equal(tc.wantDelete) {
				t.Errorf("DeleteTime() = %s, want %s", got, tc.wantDelete)
			}
			if got := drain.GracePeriodSeconds(tc.pod, deadline, tc.now); got != tc.wantGrace {
				t.Errorf("GracePeriodSeconds() = %d, want %d", got, tc.wantGrace)
			}
		})
	}
}

func TestNewPlan(t *testing.T) {
	type deletion struct {
		Pod   string
		Grace int64
	}
	type plan struct {
		Waiting   []string
		Group     drain.Group
		Evict     []string
		Delete    []deletion
		Protected []string
		NextCheck time.Time
		Drained   bool
	}
	deadline := now.Add(10 * time.Minute)
	cases := map[string]struct {
		pods            []*corev1.Pod
		terminationTime *time.Time
		want            plan
	}{
		"no pods": {want: plan{Waiting: []string{}, Evict: []string{}, Protected: []string{}, Drained: true}},
		"only skipped pods": {
			pods: []*corev1.Pod{
				makePod("mirror").mirror().obj(),
				makePod("tolerant").toleration(corev1.Toleration{Operator: corev1.TolerationOpExists}).obj(),
				makePod("done").phase(corev1.PodSucceeded).obj(),
				makePod("stuck").deleted(now.Add(-2 * time.Minute)).obj(),
			},
			want: plan{Waiting: []string{}, Evict: []string{}, Protected: []string{}, Drained: true},
		},
		"non-critical pods first": {
			pods: []*corev1.Pod{
				makePod("critical-ds").priorityClass(drain.SystemNodeCritical).daemon().obj(),
				makePod("critical").priorityClass(drain.SystemClusterCritical).obj(),
				makePod("ds").daemon().obj(),
				makePod("a").obj(),
				makePod("b").obj(),
			},
			want: plan{
				Waiting: []string{"a", "b", "ds", "critical", "critical-ds"}, Group: drain.NonCriticalNonDaemon,
				Evict: []string{"a", "b"}, Protected: []string{},
			},
		},
		"daemon pods once the others are gone": {
			pods: []*corev1.Pod{
				makePod("critical").priorityClass(drain.SystemClusterCritical).obj(),
				makePod("ds").daemon().obj(),
				makePod("done").phase(corev1.PodSucceeded).obj(),
			},
			want: plan{Waiting: []string{"ds", "critical"}, Group: drain.NonCriticalDaemon, Evict: []string{"ds"}, Protected: []string{}},
		},
		"critical daemon pods last": {
			pods: []*corev1.Pod{makePod("critical-ds").priorityClass(drain.SystemNodeCritical).daemon().obj()},
			want: plan{Waiting: []string{"critical-ds"}, Group: drain.CriticalDaemon, Evict: []string{"critical-ds"}, Protected: []string{}},
		},
		"a terminating pod holds back the next group": {
			pods: []*corev1.Pod{
				makePod("leaving").deleted(now.Add(20 * time.Second)).obj(),
				makePod("ds").daemon().obj(),
			},
			want: plan{
				Waiting: []string{"leaving", "ds"}, Group: drain.NonCriticalNonDaemon, Evict: []string{}, Protected: []string{},
				NextCheck: now.Add(20*time.Second + drain.StuckTerminatingAfter + time.Second),
			},
		},
		"do-not-disrupt is waited for, not evicted": {
			pods: []*corev1.Pod{
				makePod("protected").annotate(v1.DoNotDisruptAnnotationKey, "true").obj(),
				makePod("plain").obj(),
				makePod("ds").daemon().obj(),
			},
			want: plan{Waiting: []string{"protected", "plain", "ds"}, Group: drain.NonCriticalNonDaemon, Evict: []string{"plain"}, Protected: []string{"protected"}},
		},
		"do-not-disrupt for a duration: check again when it lapses": {
			pods: []*corev1.Pod{makePod("protected").annotate(v1.DoNotDisruptAnnotationKey, "5m").started(now.Add(-time.Minute)).obj()},
			want: plan{Waiting: []string{"protected"}, Evict: []string{}, Protected: []string{"protected"}, NextCheck: now.Add(4 * time.Minute)},
		},
		"deadline far off: evict, delete nothing, check at the first delete time": {
			pods: []*corev1.Pod{
				makePod("short").grace(30 * time.Second).obj(),
				makePod("protected").grace(2*time.Minute).annotate(v1.DoNotDisruptAnnotationKey, "true").obj(),
			},
			terminationTime: &deadline,
			want: plan{
				Waiting: []string{"short", "protected"}, Evict: []string{"short"}, Protected: []string{"protected"},
				NextCheck: deadline.Add(-2 * time.Minute),
			},
		},
		"grace longer than the time left: delete now with the time left": {
			pods: []*corev1.Pod{
				makePod("long").grace(time.Hour).obj(),
				makePod("short").obj(),
			},
			terminationTime: &deadline,
			want: plan{
				Waiting: []string{"long", "short"}, Evict: []string{"short"}, Delete: []deletion{{Pod: "long", Grace: 600}}, Protected: []string{},
				NextCheck: deadline.Add(-30 * time.Second),
			},
		},
		"deadline passed: delete every remaining pod, whatever its group or annotation": {
			pods: []*corev1.Pod{
				makePod("protected").annotate(v1.DoNotDisruptAnnotationKey, "true").obj(),
				makePod("critical-ds").priorityClass(drain.SystemNodeCritical).daemon().obj(),
				makePod("mirror").mirror().obj(),
			},
			terminationTime: ptr.To(now.Add(-time.Second)),
			want: plan{
				Waiting: []string{"protected", "critical-ds"}, Delete: []deletion{{Pod: "protected", Grace: 1}, {Pod: "critical-ds", Grace: 1}},
				Evict: []string{}, Protected: []string{"protected"},
			},
		},
		"terminating past the deadline: shorten its grace period": {
			pods:            []*corev1.Pod{makePod("slow").grace(time.Hour).deleted(deadline.Add(time.Hour)).obj()},
			terminationTime: &deadline,
			want: plan{
				Waiting: []string{"slow"}, Delete: []deletion{{Pod: "slow", Grace: 600}}, Evict: []string{}, Protected: []string{},
				NextCheck: deadline.Add(time.Hour + drain.StuckTerminatingAfter + time.Second),
			},
		},
		"terminating within the deadline: leave it": {
			pods:            []*corev1.Pod{makePod("ok").grace(time.Hour).deleted(deadline).obj()},
			terminationTime: &deadline,
			want: plan{
				Waiting: []string{"ok"}, Evict: []string{}, Protected: []string{},
				NextCheck: deadline.Add(drain.StuckTerminatingAfter + time.Second),
			},
		},
		"terminating, already shortened after the deadline: do not repeat": {
			pods:            []*corev1.Pod{makePod("ok").grace(time.Hour).deleted(now.Add(time.Second)).obj()},
			terminationTime: ptr.To(now.Add(-time.Minute)),
			want: plan{
				Waiting: []string{"ok"}, Evict: []string{}, Protected: []string{},
				NextCheck: now.Add(time.Second + drain.StuckTerminatingAfter + time.Second),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := drain.NewPlan(tc.pods, now, tc.terminationTime)
			got := plan{
				Waiting: names(p.Waiting), Group: p.Group, Evict: names(p.Evict), Protected: names(p.Protected),
				NextCheck: p.NextCheck, Drained: p.Drained(),
			}
			for _, d := range p.Delete {
				got.Delete = append(got.Delete, deletion{Pod: d.Pod.Name, Grace: d.GracePeriodSeconds})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NewPlan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
