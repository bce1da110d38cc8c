// Package daemonset works out the pod a DaemonSet runs on a new node, as
// admission would leave it: from an existing pod of the DaemonSet when the
// cluster has one (its requests are the admitted ones: LimitRange defaults,
// injected sidecars and RuntimeClass overhead included), otherwise from the
// pod template with the namespace's LimitRange defaults applied the way the
// LimitRanger admission plugin applies them. Provisioning sizes new nodes
// for these pods, so the overhead it reserves is what the daemons really
// take.
package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// templateGenerationAnnotation is the DaemonSet's template generation,
	// bumped by the API server when the pod template changes.
	templateGenerationAnnotation = appsv1.DeprecatedTemplateGeneration
	// templateGenerationLabel is the template generation the DaemonSet
	// controller stamps on each pod it creates.
	templateGenerationLabel = "pod-template-generation"
)

// OwnerKey returns the namespace and name of the DaemonSet controlling pod,
// and false for a pod no DaemonSet controls.
func OwnerKey(pod *corev1.Pod) (namespace, name string, ok bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "DaemonSet" {
		return "", "", false
	}
	return pod.Namespace, ref.Name, true
}

// PodOf reports whether pod was created by ds from its current template:
// ds controls it (same UID) and, when both carry a template generation,
// the generations agree (a pod of an older template is not the shape a new
// node gets).
func PodOf(ds *appsv1.DaemonSet, pod *corev1.Pod) bool {
	if pod == nil || pod.Namespace != ds.Namespace || !metav1.IsControlledBy(pod, ds) {
		return false
	}
	want, okDS := ds.Annotations[templateGenerationAnnotation]
	got, okPod := pod.Labels[templateGenerationLabel]
	return !okDS || !okPod || want == got
}

// Sized returns ds with the pod template a new node's daemon pod would
// have, as far as resources go. When pod is a pod of ds (see PodOf), the
// template takes its containers, init containers, pod-level resources and
// overhead, the fields admission may have changed; its scheduling fields
// (node selector, affinity, tolerations) stay the template's, since the
// DaemonSet controller pins each pod's affinity to its own node. Otherwise
// the LimitRange defaults of ranges (those of ds's namespace; others are
// skipped) are applied to the template's containers. ds is not modified; it
// is returned as is when nothing changes.
func Sized(ds *appsv1.DaemonSet, pod *corev1.Pod, ranges []*corev1.LimitRange) *appsv1.DaemonSet {
	if PodOf(ds, pod) {
		out := ds.DeepCopy()
		spec := &out.Spec.Template.Spec
		spec.Containers = podContainers(pod.Spec.Containers, ds.Spec.Template.Spec.Containers)
		spec.InitContainers = podContainers(pod.Spec.InitContainers, ds.Spec.Template.Spec.InitContainers)
		spec.Overhead = pod.Spec.Overhead
		spec.Resources = pod.Spec.Resources
		out.Spec.Template.Spec = *spec.DeepCopy()
		return out
	}
	var defaults []corev1.ResourceRequirements
	for _, lr := range ranges {
		if lr.Namespace != ds.Namespace {
			continue
		}
		if d, ok := containerDefaults(lr); ok {
			defaults = append(defaults, d)
		}
	}
	if len(defaults) == 0 {
		return ds
	}
	out := ds.DeepCopy()
	spec := &out.Spec.Template.Spec
	for i := range spec.Containers {
		applyDefaults(&spec.Containers[i], defaults)
	}
	for i := range spec.InitContainers {
		applyDefaults(&spec.InitContainers[i], defaults)
	}
	return out
}

// podContainers returns the pod's containers (with injected sidecars and
// admitted resources), or the template's when the pod has none.
func podContainers(pod, template []corev1.Container) []corev1.Container {
	if len(pod) == 0 {
		return template
	}
	return pod
}

// containerDefaults returns the default requests and limits a LimitRange
// gives containers, as the LimitRanger admission plugin reads them: every
// item of type Container contributes its defaultRequest as requests and its
// default as limits. The API server's defaulting of LimitRange items is
// applied first (it has already happened to LimitRanges read from the API
// server, so this only matters for hand-built ones): a missing default
// limit is the max, a missing default request is the default limit, else
// the min.
func containerDefaults(lr *corev1.LimitRange) (corev1.ResourceRequirements, bool) {
	out := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		limits := corev1.ResourceList{}
		for name, q := range item.Max {
			limits[name] = q
		}
		for name, q := range item.Default {
			limits[name] = q
		}
		requests := corev1.ResourceList{}
		for name, q := range item.Min {
			requests[name] = q
		}
		for name, q := range limits {
			requests[name] = q
		}
		for name, q := range item.DefaultRequest {
			requests[name] = q
		}
		for name, q := range requests {
			out.Requests[name] = q.DeepCopy()
		}
		for name, q := range limits {
			out.Limits[name] = q.DeepCopy()
		}
	}
	return out, len(out.Requests)+len(out.Limits) > 0
}

// applyDefaults gives a container what a pod made from it gets. The API
// server's pod defaulting runs first: a resource with a limit and no
// request is requested at its limit. Then each LimitRange of the namespace,
// in turn, sets the default limit of every resource without a limit and the
// default request of every resource without a request.
func applyDefaults(c *corev1.Container, defaults []corev1.ResourceRequirements) {
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	for name, q := range c.Resources.Limits {
		if _, ok := c.Resources.Requests[name]; !ok {
			c.Resources.Requests[name] = q.DeepCopy()
		}
	}
	for _, d := range defaults {
		for name, q := range d.Limits {
			if _, ok := c.Resources.Limits[name]; !ok {
				c.Resources.Limits[name] = q.DeepCopy()
			}
		}
		for name, q := range d.Requests {
			if _, ok := c.Resources.Requests[name]; !ok {
				c.Resources.Requests[name] = q.DeepCopy()
			}
		}
	}
}
