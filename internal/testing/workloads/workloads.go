// Package workloads builds and drives the pause-pod Deployments that the
// end-to-end tests scale to make Dovetail launch and remove nodes.
package workloads

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// Deployment returns a Deployment of replicas pause pods labelled app=name
// that stop at once, each requesting cpu and memory ("" requests none).
func Deployment(ns, name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	if memory != "" {
		requests[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name: "pause", Image: env.PauseImage,
						Resources: corev1.ResourceRequirements{Requests: requests},
					}},
				},
			},
		},
	}
}

// Scale sets the Deployment's replicas with a merge patch.
func Scale(t testing.TB, c client.Client, ns, name string, replicas int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if err := c.Patch(context.Background(), d, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("scaling %s to %d: %v", name, replicas, err)
	}
}

// WaitRunning waits until the app has exactly n pods, all Running and none
// terminating, and returns them.
func WaitRunning(t testing.TB, c client.Client, ns, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var running []corev1.Pod
	env.Eventually(t, timeout, fmt.Sprintf("%d %s pods Running", n, app), func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		running = nil
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, nil
			}
			running = append(running, p)
		}
		return len(running) == n, nil
	})
	return running
}
