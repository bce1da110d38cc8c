package resources

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodRequests writes into dst (which it zeroes) what a pod takes from a node,
// as the kube-scheduler counts it: the larger of (regular containers plus
// sidecars) and the peak of any init container plus the sidecars started
// before it; pod-level cpu, memory and huge-page requests replace the
// container totals when set; pod overhead is added; and the pod itself takes
// one of the node's pods. scratch must be a vector of the same index, used as
// working space. Invalid quantities and resources the index does not know fail.
func (x *Index) PodRequests(pod *corev1.Pod, dst, scratch Vector) error {
	clear(dst)
	for i := range pod.Spec.Containers {
		if err := x.AddTo(dst, pod.Spec.Containers[i].Resources.Requests); err != nil {
			return err
		}
	}
	if len(pod.Spec.InitContainers) > 0 {
		sidecars := scratch
		clear(sidecars)
		peak := make(Vector, len(dst))
		one := make(Vector, len(dst))
		for i := range pod.Spec.InitContainers {
			c := &pod.Spec.InitContainers[i]
			clear(one)
			if err := x.AddTo(one, c.Resources.Requests); err != nil {
				return err
			}
			one.Add(sidecars)
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				copy(sidecars, one)
			}
			peak.Max(one)
		}
		dst.Add(sidecars)
		dst.Max(peak)
	}
	if pod.Spec.Resources != nil {
		for name, q := range pod.Spec.Resources.Requests {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				continue
			}
			a, err := Amount(name, q)
			if err != nil {
				return err
			}
			d, ok := x.dims[name]
			if !ok {
				if a == 0 {
					continue
				}
				return &UnknownResourceError{Name: name}
			}
			dst[d] = a
		}
	}
	if err := x.AddTo(dst, pod.Spec.Overhead); err != nil {
		return err
	}
	dst[Pods]++
	return nil
}
