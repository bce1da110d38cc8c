package provisioning

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// epoch is the tests' clock reading.
var epoch = time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)

// first is the stand-ins of a standIns call.
func first(standIns []*corev1.Pod, _ []string) []*corev1.Pod { return standIns }

// ptrs points at each of pods, in place.
func ptrs(pods ...corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i := range pods {
		out[i] = &pods[i]
	}
	return out
}

// rsFixture builds ReplicaSets and their pods for the anticipation tests.
type rsFixture struct{ name string }

func (f rsFixture) uid() types.UID { return types.UID(f.name + "-uid") }

func (f rsFixture) set(replicas int32) appsv1.ReplicaSet {
	return appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: f.name, Namespace: "ns", UID: f.uid()},
		Spec:       appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)},
	}
}

// pod is replica i of the set; marked means the kube-scheduler marked it
// unschedulable.
func (f rsFixture) pod(i int, marked bool) corev1.Pod {
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05d", f.name, i), Namespace: "ns", UID: types.UID(fmt.Sprintf("%s-pod-%d", f.name, i)),
			Labels:          map[string]string{"app": f.name, "pod-template-hash": "h"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: f.name, UID: f.uid(), Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}},
	}
	if marked {
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	}
	return pod
}

// bound is pod bound to a node.
func bound(pod corev1.Pod) corev1.Pod {
	pod.Spec.NodeName = "node-a"
	return pod
}

// TestStandIns: which ReplicaSets get stand-ins for their missing
// replicas, and how many.
func TestStandIns(t *testing.T) {
	web, api := rsFixture{"web"}, rsFixture{"api"}
	terminating := web.pod(2, false)
	terminating.DeletionTimestamp = &metav1.Time{}
	finished := web.pod(3, false)
	finished.Status.Phase = corev1.PodSucceeded
	nominated := web.pod(0, true)
	nominated.Status.NominatedNodeName = "n1" // preemption may yet place it
	bound := web.pod(0, false)
	bound.Spec.NodeName = "n1"
	failing := web.set(10)
	failing.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}}
	deleting := web.set(10)
	deleting.DeletionTimestamp = &metav1.Time{}
	orphan := web.pod(5, true)
	orphan.OwnerReferences = nil
	for _, tc := range []struct {
		name string
		sets []appsv1.ReplicaSet
		pods []corev1.Pod
		want map[string]int // stand-ins per ReplicaSet
	}{
		{"one of ten created and marked", []appsv1.ReplicaSet{web.set(10)}, []corev1.Pod{web.pod(0, true)}, map[string]int{"web": 9}},
		{"three created, one marked", []appsv1.ReplicaSet{web.set(10)}, []corev1.Pod{web.pod(0, true), web.pod(1, false), bound}, map[string]int{"web": 7}},
		{"terminating and finished pods are replaced", []appsv1.ReplicaSet{web.set(4)}, []corev1.Pod{web.pod(0, true), terminating, finished}, map[string]int{"web": 3}},
		{"all created", []appsv1.ReplicaSet{web.set(2)}, []corev1.Pod{web.pod(0, true), web.pod(1, true)}, nil},
		{"none marked yet", []appsv1.ReplicaSet{web.set(10)}, []corev1.Pod{web.pod(0, false), bound}, nil},
		{"marked pod nominated by preemption", []appsv1.ReplicaSet{web.set(10)}, []corev1.Pod{nominated}, nil},
		{"the controller failed to create pods", []appsv1.ReplicaSet{failing}, []corev1.Pod{web.pod(0, true)}, nil},
		{"replicaset being deleted", []appsv1.ReplicaSet{deleting}, []corev1.Pod{web.pod(0, true)}, nil},
		{"a pod without the replicaset as controller", []appsv1.ReplicaSet{web.set(10)}, []corev1.Pod{orphan}, nil},
		{"two replicasets", []appsv1.ReplicaSet{web.set(3), api.set(5)}, []corev1.Pod{web.pod(0, true), api.pod(0, true), api.pod(1, false)},
			map[string]int{"web": 2, "api": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]int{}
			for _, pod := range first(newAnticipation().standIns(tc.sets, ptrs(tc.pods...), epoch)) {
				got[metav1.GetControllerOf(pod).Name]++
			}
			if fmt.Sprint(got) != fmt.Sprint(orEmpty(tc.want)) {
				t.Errorf("stand-ins per ReplicaSet %v, want %v", got, orEmpty(tc.want))
			}
		})
	}
}

func orEmpty(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// TestStandInsAreCopiesNoPodHas: a stand-in has the marked pod's labels,
// owner and requests, is pending, carries the anticipated annotation, and
// its name and UID are its own; the pods read are left as they were.
func TestStandInsAreCopiesNoPodHas(t *testing.T) {
	web := rsFixture{"web"}
	pods := []corev1.Pod{web.pod(0, true)}
	pods[0].Annotations = map[string]string{"team": "a"}
	standIns := first(newAnticipation().standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(pods...), epoch))
	if len(standIns) != 2 {
		t.Fatalf("%d stand-ins, want 2", len(standIns))
	}
	seen := map[string]bool{pods[0].Name: true, string(pods[0].UID): true}
	for _, s := range standIns {
		if seen[s.Name] || seen[string(s.UID)] {
			t.Errorf("stand-in %s (UID %s) reuses a name or UID", s.Name, s.UID)
		}
		seen[s.Name], seen[string(s.UID)] = true, true
		if !IsAnticipated(s) || s.Annotations["team"] != "a" || s.Labels["app"] != "web" || s.Namespace != "ns" {
			t.Errorf("stand-in %s: annotations %v, labels %v, namespace %q", s.Name, s.Annotations, s.Labels, s.Namespace)
		}
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != web.uid() {
			t.Errorf("stand-in %s has controller %v, want the ReplicaSet", s.Name, ref)
		}
		if s.Spec.NodeName != "" || len(s.Status.Conditions) != 0 || s.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 250 {
			t.Errorf("stand-in %s: node %q, conditions %v, requests %v", s.Name, s.Spec.NodeName, s.Status.Conditions, s.Spec.Containers[0].Resources.Requests)
		}
	}
	if IsAnticipated(&pods[0]) || len(pods[0].Annotations) != 1 {
		t.Errorf("the marked pod was changed: annotations %v", pods[0].Annotations)
	}
}

// TestStandInsOncePerReplicaCount: a ReplicaSet is anticipated once per
// replica count, so that replicas that never come (and whose empty nodes
// consolidation removes) are not launched for again; a scale-up is
// anticipated, a scale down and up again too, and a ReplicaSet that is
// gone is forgotten.
func TestStandInsOncePerReplicaCount(t *testing.T) {
	web := rsFixture{"web"}
	a := newAnticipation()
	marked := []corev1.Pod{web.pod(0, true)}
	steps := []struct {
		name     string
		replicas int32
		want     int
	}{
		{"first pass", 10, 9},
		{"the same count again", 10, 0},
		{"scaled up", 20, 19},
		{"scaled down", 5, 0},
		{"scaled up again", 20, 19},
	}
	for _, step := range steps {
		if got := len(first(a.standIns([]appsv1.ReplicaSet{web.set(step.replicas)}, ptrs(marked...), epoch))); got != step.want {
			t.Errorf("%s (%d replicas): %d stand-ins, want %d", step.name, step.replicas, got, step.want)
		}
	}
	a.standIns(nil, ptrs(marked...), epoch)
	if len(a.done) != 0 {
		t.Errorf("a ReplicaSet that is gone is still remembered: %v", a.done)
	}
}

// TestRealPods drops the stand-ins.
func TestRealPods(t *testing.T) {
	web := rsFixture{"web"}
	pods := []corev1.Pod{web.pod(0, true)}
	standIns := first(newAnticipation().standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(pods...), epoch))
	got := realPods(append([]*corev1.Pod{&pods[0]}, standIns...))
	if len(got) != 1 || got[0] != &pods[0] {
		t.Errorf("realPods kept %d pods, want only the marked one", len(got))
	}
}

// TestStandInsAreBounded: one pass makes at most maxStandIns, however many
// replicas are missing.
func TestStandInsAreBounded(t *testing.T) {
	web, api := rsFixture{"web"}, rsFixture{"api"}
	got := first(newAnticipation().standIns([]appsv1.ReplicaSet{web.set(maxStandIns), api.set(50)}, ptrs(web.pod(0, true), api.pod(0, true)), epoch))
	if len(got) != maxStandIns {
		t.Errorf("%d stand-ins, want %d", len(got), maxStandIns)
	}
}

// TestDeferredOf marks the stand-ins, and nothing when there are none.
func TestDeferredOf(t *testing.T) {
	web := rsFixture{"web"}
	pods := []corev1.Pod{web.pod(0, true)}
	standIns := first(newAnticipation().standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(pods...), epoch))
	got := deferredOf(append([]*corev1.Pod{&pods[0]}, standIns...))
	if len(got) != 2 || got[pods[0].UID] || !got[standIns[0].UID] || !got[standIns[1].UID] {
		t.Errorf("deferredOf = %v, want the two stand-ins", got)
	}
	if got := deferredOf([]*corev1.Pod{&pods[0]}); got != nil {
		t.Errorf("deferredOf(no stand-ins) = %v, want nil", got)
	}
}

// TestHeldClaims: the NodeClaims launched for a ReplicaSet's stand-ins are
// held (kept nominated) while its replicas are still to come, and no
// longer once they all exist, once the ReplicaSet fails to create them or
// is gone, or anticipationHold after the launch: a held node is kept from
// drift and expiration too.
func TestHeldClaims(t *testing.T) {
	web := rsFixture{"web"}
	one := []corev1.Pod{web.pod(0, true)}
	standIns, _ := newAnticipation().standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(one...), epoch)
	if owners := standInOwners(append(standIns, &one[0])); len(owners) != 1 || owners[0] != web.uid() {
		t.Fatalf("standInOwners = %v, want the ReplicaSet's UID once", owners)
	}
	failing := web.set(3)
	failing.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}}
	for _, step := range []struct {
		name  string
		sets  []appsv1.ReplicaSet
		pods  []corev1.Pod
		after time.Duration
		want  []string
	}{
		{"replicas still to come", []appsv1.ReplicaSet{web.set(3)}, one, time.Minute, []string{"claim-a"}},
		{"near the limit", []appsv1.ReplicaSet{web.set(3)}, one, anticipationHold - time.Second, []string{"claim-a"}},
		{"all replicas exist, not all bound", []appsv1.ReplicaSet{web.set(3)}, []corev1.Pod{web.pod(0, true), bound(web.pod(1, false)), bound(web.pod(2, false))}, time.Minute, []string{"claim-a"}},
		{"all replicas exist and are bound", []appsv1.ReplicaSet{web.set(3)}, []corev1.Pod{bound(web.pod(0, false)), bound(web.pod(1, false)), bound(web.pod(2, false))}, time.Minute, nil},
	} {
		b := newAnticipation()
		b.hold(web.uid(), "claim-a", epoch)
		if _, held := b.standIns(step.sets, ptrs(step.pods...), epoch.Add(step.after)); fmt.Sprint(held) != fmt.Sprint(step.want) {
			t.Errorf("%s: held %v, want %v", step.name, held, step.want)
		}
	}
	for _, step := range []struct {
		name  string
		sets  []appsv1.ReplicaSet
		after time.Duration
	}{
		{"past the hold", []appsv1.ReplicaSet{web.set(3)}, anticipationHold},
		{"the ReplicaSet cannot create pods", []appsv1.ReplicaSet{failing}, time.Minute},
		{"the ReplicaSet is gone", nil, time.Minute},
	} {
		b := newAnticipation()
		b.hold(web.uid(), "claim-a", epoch)
		if _, held := b.standIns(step.sets, ptrs(one...), epoch.Add(step.after)); len(held) != 0 {
			t.Errorf("%s: held %v, want none", step.name, held)
		}
		// Once released, a claim is not held again.
		if _, held := b.standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(one...), epoch.Add(step.after)); len(held) != 0 {
			t.Errorf("%s, next pass: held %v, want none", step.name, held)
		}
	}
}

func TestHeldFor(t *testing.T) {
	web, api := rsFixture{"web"}, rsFixture{"api"}
	webPod, apiPod := web.pod(0, true), api.pod(0, true)
	standIns, _ := newAnticipation().standIns([]appsv1.ReplicaSet{web.set(3)}, ptrs(webPod), epoch)
	orphan := webPod.DeepCopy()
	orphan.OwnerReferences = nil
	anticipated := map[types.UID]bool{web.uid(): true}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want []types.UID
	}{
		{"a stand-in", standIns[:1], []types.UID{web.uid()}},
		{"a real replica of the anticipated ReplicaSet", []*corev1.Pod{&webPod}, []types.UID{web.uid()}},
		{"both, once", []*corev1.Pod{&webPod, standIns[0], standIns[1]}, []types.UID{web.uid()}},
		{"another ReplicaSet's pod", []*corev1.Pod{&apiPod}, nil},
		{"a pod with no owner", []*corev1.Pod{orphan}, nil},
		{"no pods", nil, nil},
	} {
		if got := heldFor(tc.pods, anticipated); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: heldFor = %v, want %v", tc.name, got, tc.want)
		}
	}
}
