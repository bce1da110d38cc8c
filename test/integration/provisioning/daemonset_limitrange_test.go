package provisioning_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestDaemonSetOverheadFromLimitRangeThenAdmittedPod: a high-priority
// DaemonSet whose template requests nothing, in a namespace whose LimitRange
// gives containers a default request. Before any of its pods exists, the
// DaemonSets the provisioner simulates with carry the LimitRange's default
// requests (not its default limits), and a claim launched for a workload
// pod reserves them. Once a pod of the DaemonSet exists (made here as the
// DaemonSet controller makes one, with an injected sidecar), its admitted
// requests are the overhead instead.
func TestDaemonSetOverheadFromLimitRangeThenAdmittedPod(t *testing.T) {
	h := newHarness(t, instanceTypes()...)
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	testEnv.CreateReadyNodePool(t, dtesting.MakeNodePool("default").Obj())

	// No kube-controller-manager runs here: a deleted namespace keeps its
	// objects, and a DaemonSet left behind would add overhead to the claims
	// of later tests. Delete what this test creates explicitly.
	deleteAtEnd := func(obj client.Object) {
		t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), obj) })
	}
	limitRange := &corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: ns},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			},
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
		}}},
	}
	priority := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high-" + ns}, Value: 1_000_000}
	for _, obj := range []client.Object{limitRange, priority} {
		if err := testEnv.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", env.Describe(obj), err)
		}
		deleteAtEnd(obj)
	}
	labels := map[string]string{"app": "daemon"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "daemon", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					PriorityClassName:             priority.Name,
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{{Name: "daemon", Image: env.PauseImage}},
				},
			},
		},
	}
	if err := testEnv.Client.Create(ctx, ds); err != nil {
		t.Fatalf("creating daemonset: %v", err)
	}
	deleteAtEnd(ds)

	// 1. No pod of the DaemonSet yet: the template with the LimitRange's
	// default requests.
	h.expectDaemonRequests(t, ns, ds.Name, "500m", "256Mi")

	workload := dtesting.MakePod("workload").Namespace(ns).Obj() // requests nothing: LimitRanger fills them
	workload = testEnv.CreatePendingPod(t, workload)
	if got := resourcehelper.PodRequests(workload, resourcehelper.PodResourcesOptions{}); got.Cpu().String() != "500m" {
		t.Fatalf("workload pod admitted with requests %v, want the LimitRange's 500m cpu (is LimitRanger enabled?)", got)
	}
	h.waitForPods(t, ns, 1)
	h.provision(t)
	h.expectOneClaimRequesting(t, "1", "512Mi") // the workload pod and the daemon, 500m/256Mi each

	// 2. A pod of the DaemonSet exists: its admitted requests win. It is made
	// as the DaemonSet controller makes one (controller reference, the
	// template generation label), with a sidecar as a mutating webhook would
	// inject, so that its requests differ from the template's.
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(ds), ds); err != nil {
		t.Fatal(err)
	}
	generation := ds.Annotations[appsv1.DeprecatedTemplateGeneration]
	if generation == "" {
		t.Fatalf("daemonset has no %s annotation: %v", appsv1.DeprecatedTemplateGeneration, ds.Annotations)
	}
	daemonPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "daemon-abcde", Namespace: ns,
			Labels:          map[string]string{"app": "daemon", "pod-template-generation": generation},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))},
		},
		Spec: *ds.Spec.Template.Spec.DeepCopy(),
	}
	daemonPod.Spec.Containers = append(daemonPod.Spec.Containers, corev1.Container{
		Name: "sidecar", Image: env.PauseImage,
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
	})
	if err := testEnv.Client.Create(ctx, daemonPod); err != nil {
		t.Fatalf("creating the daemonset's pod: %v", err)
	}
	if got := resourcehelper.PodRequests(daemonPod, resourcehelper.PodResourcesOptions{}); got.Cpu().String() != "600m" || got.Memory().String() != "320Mi" {
		t.Fatalf("daemon pod admitted with requests %v, want 600m cpu and 320Mi memory", got)
	}
	h.expectDaemonRequests(t, ns, ds.Name, "600m", "320Mi")

	// A claim launched now reserves the admitted pod's requests.
	deleteClaims(t)
	env.Eventually(t, 30*time.Second, "the deleted claim to leave cluster state", func(context.Context) (bool, error) {
		return len(h.cluster.Nodes()) == 0, nil
	})
	h.provision(t)
	h.expectOneClaimRequesting(t, "1100m", "576Mi") // 500m/256Mi for the workload, 600m/320Mi for the daemon
}

// expectDaemonRequests waits until the DaemonSets the provisioner simulates
// with (the cluster state's snapshot) include ns/name with a pod template
// requesting cpu and memory.
func (h *harness) expectDaemonRequests(t *testing.T, ns, name, cpu, memory string) {
	t.Helper()
	var last string
	env.Eventually(t, 30*time.Second, fmt.Sprintf("daemonset %s/%s in cluster state requesting %s cpu and %s memory", ns, name, cpu, memory), func(context.Context) (bool, error) {
		last = "not in the snapshot"
		for _, ds := range h.cluster.Snapshot(nil, nil).DaemonSets {
			if ds.Namespace != ns || ds.Name != name {
				continue
			}
			pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
			got := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
			last = fmt.Sprintf("cpu %s, memory %s", got.Cpu(), got.Memory())
			return got.Cpu().Cmp(resource.MustParse(cpu)) == 0 && got.Memory().Cmp(resource.MustParse(memory)) == 0, nil
		}
		return false, nil
	})
	t.Logf("daemonset %s/%s sized %s", ns, name, last)
}

// expectOneClaimRequesting checks that exactly one NodeClaim exists and
// that it requests cpu and memory.
func (h *harness) expectOneClaimRequesting(t *testing.T, cpu, memory string) {
	t.Helper()
	claims := h.claims(t)
	if len(claims) != 1 {
		t.Fatalf("%d NodeClaims, want 1", len(claims))
	}
	requests := claims[0].Spec.Resources.Requests
	if requests.Cpu().Cmp(resource.MustParse(cpu)) != 0 || requests.Memory().Cmp(resource.MustParse(memory)) != 0 {
		t.Errorf("NodeClaim %s requests cpu %s and memory %s, want %s and %s (the workload pod and the daemon)",
			claims[0].Name, requests.Cpu(), requests.Memory(), cpu, memory)
	}
}
