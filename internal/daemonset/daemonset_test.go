package daemonset

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func daemonSet(resources corev1.ResourceRequirements) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent", UID: "ds-uid", Annotations: map[string]string{appsv1.DeprecatedTemplateGeneration: "2"}},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/arch": "arm64"},
			Containers:   []corev1.Container{{Name: "agent", Resources: resources}},
		}}},
	}
}

func limitRange(namespace string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func podOf(generation string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "kube-system", Name: "agent-x1", Labels: map[string]string{"pod-template-generation": generation},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName:     "node-a",
			NodeSelector: map[string]string{"kubernetes.io/arch": "arm64"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}},
			}}},
			Containers: []corev1.Container{
				{Name: "agent", Resources: corev1.ResourceRequirements{Requests: requests}},
				{Name: "injected-sidecar", Resources: corev1.ResourceRequirements{Requests: list("cpu", "50m")}},
			},
			Overhead: list("memory", "10Mi"),
		},
	}
}

// TestSized checks the containers of the pod a new node's daemon gets.
func TestSized(t *testing.T) {
	cases := map[string]struct {
		ds       *appsv1.DaemonSet
		pod      *corev1.Pod
		ranges   []*corev1.LimitRange
		want     []corev1.ResourceRequirements
		overhead corev1.ResourceList
	}{
		"no pod, no limit range: the template": {
			ds:   daemonSet(corev1.ResourceRequirements{Requests: list("cpu", "100m")}),
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "100m")}},
		},
		"defaultRequest and default fill what the template leaves out": {
			ds: daemonSet(corev1.ResourceRequirements{Requests: list("cpu", "100m")}),
			ranges: []*corev1.LimitRange{limitRange("kube-system", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, DefaultRequest: list("cpu", "500m", "memory", "1Gi"), Default: list("cpu", "1", "memory", "2Gi"),
			})},
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "100m", "memory", "1Gi"), Limits: list("cpu", "1", "memory", "2Gi")}},
		},
		"default limit alone is the default request": {
			ds: daemonSet(corev1.ResourceRequirements{}),
			ranges: []*corev1.LimitRange{limitRange("kube-system", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Default: list("memory", "512Mi"),
			})},
			want: []corev1.ResourceRequirements{{Requests: list("memory", "512Mi"), Limits: list("memory", "512Mi")}},
		},
		"max is the default limit, min the default request": {
			ds: daemonSet(corev1.ResourceRequirements{}),
			ranges: []*corev1.LimitRange{limitRange("kube-system", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, Max: list("cpu", "2"), Min: list("memory", "64Mi"),
			})},
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "2", "memory", "64Mi"), Limits: list("cpu", "2")}},
		},
		"a container limit is its request before the defaults": {
			ds: daemonSet(corev1.ResourceRequirements{Limits: list("cpu", "300m")}),
			ranges: []*corev1.LimitRange{limitRange("kube-system", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, DefaultRequest: list("cpu", "500m"), Default: list("cpu", "1"),
			})},
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "300m"), Limits: list("cpu", "300m")}},
		},
		"pod-type items and other namespaces do not apply": {
			ds: daemonSet(corev1.ResourceRequirements{}),
			ranges: []*corev1.LimitRange{
				limitRange("default", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: list("cpu", "1")}),
				limitRange("kube-system", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: list("cpu", "4")}),
			},
			want: []corev1.ResourceRequirements{{}},
		},
		"an existing pod gives the admitted containers and overhead": {
			ds:  daemonSet(corev1.ResourceRequirements{}),
			pod: podOf("2", list("cpu", "500m", "memory", "1Gi")),
			ranges: []*corev1.LimitRange{limitRange("kube-system", corev1.LimitRangeItem{
				Type: corev1.LimitTypeContainer, DefaultRequest: list("cpu", "9"),
			})},
			want:     []corev1.ResourceRequirements{{Requests: list("cpu", "500m", "memory", "1Gi")}, {Requests: list("cpu", "50m")}},
			overhead: list("memory", "10Mi"),
		},
		"a pod of an older template is not used": {
			ds:   daemonSet(corev1.ResourceRequirements{Requests: list("cpu", "100m")}),
			pod:  podOf("1", list("cpu", "500m")),
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "100m")}},
		},
		"a pod of another daemonset is not used": {
			ds: daemonSet(corev1.ResourceRequirements{Requests: list("cpu", "100m")}),
			pod: func() *corev1.Pod {
				p := podOf("2", list("cpu", "500m"))
				p.OwnerReferences[0].UID = "other"
				return p
			}(),
			want: []corev1.ResourceRequirements{{Requests: list("cpu", "100m")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.ds.DeepCopy()
			got := Sized(tc.ds, tc.pod, tc.ranges)
			if diff := cmp.Diff(before, tc.ds); diff != "" {
				t.Errorf("Sized modified its input (-before +after):\n%s", diff)
			}
			var resources []corev1.ResourceRequirements
			for _, c := range got.Spec.Template.Spec.Containers {
				r := c.Resources
				if len(r.Requests) == 0 {
					r.Requests = nil
				}
				if len(r.Limits) == 0 {
					r.Limits = nil
				}
				resources = append(resources, r)
			}
			if diff := cmp.Diff(tc.want, resources); diff != "" {
				t.Errorf("container resources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.overhead, got.Spec.Template.Spec.Overhead); diff != "" {
				t.Errorf("overhead (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Spec.Template.Spec.NodeSelector, got.Spec.Template.Spec.NodeSelector); diff != "" {
				t.Errorf("node selector (-template +got):\n%s", diff)
			}
			if got.Spec.Template.Spec.Affinity != nil {
				t.Errorf("the pod's node-pinning affinity leaked into the template: %v", got.Spec.Template.Spec.Affinity)
			}
		})
	}
}
