package provisioning_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/cachedpods"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestCachedPodsAreTheCachesOwn: read from the manager's cache,
// cachedpods.List returns every pod the cache holds, as the cache's own
// objects (the same pointers on every call, no copy), and the same pods
// as a List through the manager's client (its fallback, for a reader that
// is no informer cache), updates and deletions included.
func TestCachedPodsAreTheCachesOwn(t *testing.T) {
	ctx := context.Background()
	ns := testEnv.Namespace(t)
	mgr := testEnv.StartManager(t, func(manager.Manager) error { return nil })
	for _, pod := range []*corev1.Pod{
		{Spec: corev1.PodSpec{NodeName: "bound-somewhere"}},
		{},
		{},
	} {
		pod.GenerateName, pod.Namespace = "pod-", ns
		pod.Spec.Containers = []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}
		if err := testEnv.Client.Create(ctx, pod); err != nil {
			t.Fatalf("creating pod: %v", err)
		}
	}
	stored := &corev1.PodList{}
	if err := testEnv.Client.List(ctx, stored, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// One pod changes and one goes: the cache must show both.
	changed, gone := stored.Items[1].DeepCopy(), &stored.Items[2]
	changed.Labels = map[string]string{"changed": "yes"}
	if err := testEnv.Client.Update(ctx, changed); err != nil {
		t.Fatalf("labelling pod %s: %v", changed.Name, err)
	}
	if err := testEnv.Client.Delete(ctx, gone, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("deleting pod %s: %v", gone.Name, err)
	}
	want := map[string]string{stored.Items[0].Name: "", changed.Name: changed.ResourceVersion}

	inNamespace := func(pods []*corev1.Pod) map[string]*corev1.Pod {
		out := map[string]*corev1.Pod{}
		for _, p := range pods {
			if p.Namespace == ns {
				out[p.Name] = p
			}
		}
		return out
	}
	var fromCache map[string]*corev1.Pod
	env.Eventually(t, 30*time.Second, "the cache to hold the namespace's pods as they are now", func(ctx context.Context) (bool, error) {
		pods, err := cachedpods.List(ctx, mgr.GetCache())
		if err != nil {
			return false, err
		}
		fromCache = inNamespace(pods)
		if len(fromCache) != len(want) {
			return false, nil
		}
		for name, version := range want {
			if p := fromCache[name]; p == nil || (version != "" && p.ResourceVersion != version) {
				return false, nil
			}
		}
		return true, nil
	})

	again, err := cachedpods.List(ctx, mgr.GetCache())
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range inNamespace(again) {
		if fromCache[name] != p {
			t.Errorf("pod %s: a second List returned another object; want the cache's own, not a copy", name)
		}
	}
	viaClient, err := cachedpods.List(ctx, mgr.GetClient())
	if err != nil {
		t.Fatal(err)
	}
	got := inNamespace(viaClient)
	names := func(m map[string]*corev1.Pod) []string {
		var out []string
		for name, p := range m {
			out = append(out, name+"@"+p.ResourceVersion)
		}
		slices.Sort(out)
		return out
	}
	if a, b := names(got), names(fromCache); !slices.Equal(a, b) {
		t.Errorf("through the client: %v; from the cache: %v", a, b)
	}
}
