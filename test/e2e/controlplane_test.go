package e2e_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// TestFullControlPlaneRunsPodsOnKwokNodes proves the full profile works as a
// cluster: kwok makes an annotated Node Ready, the kube-controller-manager
// turns a Deployment into pods, the kube-scheduler binds them to the node and
// kwok reports them Running.
func TestFullControlPlaneRunsPodsOnKwokNodes(t *testing.T) {
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "kwok-smoke",
			Annotations: map[string]string{controlplane.KwokNodeAnnotationKey: controlplane.KwokNodeAnnotationValue},
			Labels:      map[string]string{corev1.LabelHostname: "kwok-smoke", "smoke": "true"},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "smoke", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	if err := testEnv.Client.Create(ctx, node); err != nil {
		t.Fatalf("creating node: %v", err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, node) })
	waitFor(t, "node Ready", func(ctx context.Context) (bool, error) {
		got := &corev1.Node{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), got); err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})

	ns := testEnv.Namespace(t)
	labels := map[string]string{"app": "smoke"}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"smoke": "true"},
					Tolerations:  []corev1.Toleration{{Key: "smoke", Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{
						Name: "pause", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	if err := testEnv.Client.Create(ctx, deployment); err != nil {
		t.Fatalf("creating deployment: %v", err)
	}
	waitFor(t, "3 pods Running on the kwok node", func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := testEnv.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(labels)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 3, nil
	})
}

// waitFor polls condition every 100ms for up to a minute, failing the test
// with what was awaited when the deadline passes.
func waitFor(t *testing.T, what string, condition wait.ConditionWithContextFunc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, condition); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
