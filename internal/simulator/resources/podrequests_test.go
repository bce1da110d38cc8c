package resources

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

func requests(pairs ...string) corev1.ResourceRequirements {
	list := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return corev1.ResourceRequirements{Requests: list}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	cases := map[string]struct {
		spec corev1.PodSpec
		want map[corev1.ResourceName]string
	}{
		"containers add up": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: requests("cpu", "500m", "memory", "1Gi")}, {Resources: requests("cpu", "250m")}}},
			want: map[corev1.ResourceName]string{"cpu": "750m", "memory": "1Gi", "pods": "1"},
		},
		"init container peak wins": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Resources: requests("cpu", "2")}},
				Containers:     []corev1.Container{{Resources: requests("cpu", "500m", "memory", "1Gi")}},
			},
			want: map[corev1.ResourceName]string{"cpu": "2", "memory": "1Gi", "pods": "1"},
		},
		"sidecars run beside containers and later init containers": {
			spec: corev1.PodSpec{
				InitContainers: []corev1.Container{
					{Resources: requests("cpu", "100m", "memory", "64Mi"), RestartPolicy: &always},
					{Resources: requests("cpu", "1")},
				},
				Containers: []corev1.Container{{Resources: requests("cpu", "500m")}},
			},
			want: map[corev1.ResourceName]string{"cpu": "1100m", "memory": "64Mi", "pods": "1"},
		},
		"pod overhead and extended resources": {
			spec: corev1.PodSpec{
				Containers: []corev1.Container{{Resources: requests("cpu", "1", "nvidia.com/gpu", "1")}},
				Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")},
			},
			want: map[corev1.ResourceName]string{"cpu": "1250m", "memory": "120Mi", "nvidia.com/gpu": "1", "pods": "1"},
		},
		"pod-level resources replace container totals": {
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}},
				Containers: []corev1.Container{{Resources: requests("cpu", "1", "memory", "1Gi")}},
			},
			want: map[corev1.ResourceName]string{"cpu": "3", "memory": "1Gi", "pods": "1"},
		},
		"no requests": {
			spec: corev1.PodSpec{Containers: []corev1.Container{{}}},
			want: map[corev1.ResourceName]string{"pods": "1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := NewIndex()
			x.AddName("nvidia.com/gpu")
			v, scratch := x.New(), x.New()
			if err := x.PodRequests(&corev1.Pod{Spec: tc.spec}, v, scratch); err != nil {
				t.Fatal(err)
			}
			got := map[corev1.ResourceName]string{}
			for n, q := range x.ToList(v) {
				got[n] = q.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodRequestsRejectsBadInput(t *testing.T) {
	cases := map[string]corev1.PodSpec{
		"negative":         {Containers: []corev1.Container{{Resources: requests("cpu", "-1")}}},
		"huge":             {Containers: []corev1.Container{{Resources: requests("memory", "100Ei")}}},
		"unknown resource": {Containers: []corev1.Container{{Resources: requests("example.com/widget", "1")}}},
	}
	for name, spec := range cases {
		t.Run(name, func(t *testing.T) {
			x := NewIndex()
			if err := x.PodRequests(&corev1.Pod{Spec: spec}, x.New(), x.New()); err == nil {
				t.Errorf("PodRequests() = nil, want an error")
			}
		})
	}
}

// TestPodRequestsMatchesComponentHelpers checks random pods against the
// kube-scheduler's own accounting in k8s.io/component-helpers.
func TestPodRequestsMatchesComponentHelpers(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 7))
	always := corev1.ContainerRestartPolicyAlways
	names := []string{"cpu", "memory", "nvidia.com/gpu", "ephemeral-storage"}
	amounts := map[string][]string{
		"cpu": {"0", "100m", "250m", "1", "1500m"}, "memory": {"64Mi", "1Gi", "3Gi"},
		"nvidia.com/gpu": {"1", "2"}, "ephemeral-storage": {"1Gi", "10Gi"},
	}
	randomRequests := func() corev1.ResourceRequirements {
		var pairs []string
		for _, n := range names {
			if rng.IntN(2) == 0 {
				pairs = append(pairs, n, amounts[n][rng.IntN(len(amounts[n]))])
			}
		}
		return requests(pairs...)
	}
	for i := range 2000 {
		pod := &corev1.Pod{}
		for range rng.IntN(3) {
			c := corev1.Container{Resources: randomRequests()}
			if rng.IntN(2) == 0 {
				c.RestartPolicy = &always
			}
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		}
		for range 1 + rng.IntN(3) {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Resources: randomRequests()})
		}
		if rng.IntN(4) == 0 {
			pod.Spec.Overhead = randomRequests().Requests
		}
		if rng.IntN(5) == 0 {
			pod.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("5Gi")}}
		}
		x := NewIndex()
		x.AddName("nvidia.com/gpu")
		got := x.New()
		if err := x.PodRequests(pod, got, x.New()); err != nil {
			t.Fatal(err)
		}
		want := x.New()
		if err := x.AddTo(want, resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})); err != nil {
			t.Fatal(err)
		}
		want[Pods]++
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("pod %d: (-component-helpers +ours):\n%s\n%+v", i, diff, pod.Spec)
		}
	}
}
