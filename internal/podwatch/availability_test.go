package podwatch

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

func pod(name, app string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": app}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

// TestAvailabilityRemembersTheLowest: the minimum counts only the app's
// Ready pods, starts at Record, and keeps the lowest count seen after it
// even once the pods are Ready again.
func TestAvailabilityRemembersTheLowest(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(pod("a", "web", true), pod("b", "web", true), pod("c", "web", false), pod("other", "db", true))
	a, err := Watch(cs, "ns", "web")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if ready, minimum := a.Now(); ready != 2 || minimum != -1 {
		t.Fatalf("before Record: ready %d minimum %d, want 2 and -1", ready, minimum)
	}
	a.Record()
	pods := cs.CoreV1().Pods("ns")
	steps := []struct {
		do                 func() error
		ready, wantMinimum int
	}{
		{func() error {
			_, err := pods.UpdateStatus(ctx, pod("c", "web", true), metav1.UpdateOptions{})
			return err
		}, 3, 2},
		{func() error { return pods.Delete(ctx, "a", metav1.DeleteOptions{}) }, 2, 2},
		{func() error {
			_, err := pods.UpdateStatus(ctx, pod("b", "web", false), metav1.UpdateOptions{})
			return err
		}, 1, 1},
		{func() error { _, err := pods.Create(ctx, pod("d", "web", true), metav1.CreateOptions{}); return err }, 2, 1},
	}
	for i, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			ready, _ := a.Now()
			return ready == step.ready, nil
		})
		ready, minimum := a.Now()
		if err != nil || minimum != step.wantMinimum {
			t.Errorf("step %d: ready %d minimum %d, want %d and %d", i, ready, minimum, step.ready, step.wantMinimum)
		}
	}
}
