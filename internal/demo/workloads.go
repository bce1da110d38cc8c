package demo

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Namespace holds the demo's workloads.
const Namespace = "demo"

// workload is one Deployment of the story.
type workload struct {
	name     string
	replicas int32
	cpu      string
	memory   string
	// describe says what is special about it, for the narration.
	describe string
	shape    func(*corev1.PodSpec)
}

// workloads are three shapes: many small pods spread over zones, a few
// medium pods guarded by a PDB, and a few large memory-heavy pods.
func workloads() []workload {
	return []workload{
		{name: "web", replicas: 12, cpu: "250m", memory: "512Mi", describe: "spread evenly over zones (maxSkew 1)",
			shape: func(spec *corev1.PodSpec) {
				spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
					MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				}}
			}},
		{name: "api", replicas: 6, cpu: "1", memory: "2Gi", describe: fmt.Sprintf("guarded by a PodDisruptionBudget (minAvailable %d)", apiMinAvailable)},
		{name: "batch", replicas: 4, cpu: "2", memory: "8Gi", describe: "memory-heavy"},
	}
}

// apiMinAvailable is the api PDB's minimum.
const apiMinAvailable = 5

func (w workload) deployment() *appsv1.Deployment {
	labels := map[string]string{"app": w.name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Namespace: Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(w.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					Containers: []corev1.Container{{
						Name: w.name, Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(w.cpu), corev1.ResourceMemory: resource.MustParse(w.memory),
						}},
					}},
				},
			},
		},
	}
	if w.shape != nil {
		w.shape(&d.Spec.Template.Spec)
	}
	return d
}

func apiPDB() *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: Namespace},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(apiMinAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
		},
	}
}
