package kwok

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// notReadyTaint is what keeps pods off a Node that is still "booting": the
// taint a kubelet's node reports until it is Ready. The registration
// controller removes it when it hands the Node to kwok.
func notReadyTaint() corev1.Taint {
	return corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
}

// newNode builds the Node of a claim's instance, launched at now.
//
// Labels, later ones winning: the claim's single-value requirements (for
// example a NodePool requirement team In [a]), the claim's labels, the
// instance type's labels, the offering's zone and capacity type, the
// hostname and the provider's partition. Taints: karpenter.sh/unregistered
// (the core removes it when it registers the Node), the claim's taints and
// startup taints. Capacity and allocatable come from the instance type.
//
// With no registration delay the Node carries the kwok annotation at once.
// Otherwise it carries RegisterAfterAnnotationKey = now + delay and the
// not-ready taint, and the registration controller hands it to kwok then.
func newNode(nodeClaim *v1.NodeClaim, nodeClassName string, reqs requirements.Requirements, chosen candidate, partition string, now time.Time, registrationDelay time.Duration) *corev1.Node {
	it, offering := chosen.instanceType, chosen.offering
	name := nodeClaim.Name
	labels := reqs.Labels()
	delete(labels, corev1.LabelHostname)
	maps.Copy(labels, nodeClaim.Labels)
	maps.Copy(labels, it.Requirements.Labels())
	labels[corev1.LabelTopologyZone] = offering.Zone
	labels[v1.CapacityTypeLabelKey] = offering.CapacityType
	labels[corev1.LabelHostname] = name
	labels[PartitionLabelKey] = partition

	annotations := map[string]string{NodeClassAnnotationKey: nodeClassName}
	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint()}
	if registrationDelay > 0 {
		annotations[RegisterAfterAnnotationKey] = now.Add(registrationDelay).UTC().Format(time.RFC3339Nano)
		taints = append(taints, notReadyTaint())
	} else {
		annotations[KwokNodeAnnotationKey] = KwokNodeAnnotationValue
	}
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints) {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + name, Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable().DeepCopy(),
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    labels[corev1.LabelArchStable],
				OperatingSystem: labels[corev1.LabelOSStable],
			},
		},
	}
}

// hasTaint reports whether taints has one with t's key and effect.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, have := range taints {
		if have.MatchTaint(&t) {
			return true
		}
	}
	return false
}

// fillClaim returns a copy of the claim completed from its Node: provider
// ID, capacity, allocatable, and the Node's labels except hostname and
// partition (instance type, zone, capacity type and the instance-type labels).
func fillClaim(nodeClaim *v1.NodeClaim, node *corev1.Node) *v1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for key, value := range node.Labels {
		if key != corev1.LabelHostname && key != PartitionLabelKey {
			out.Labels[key] = value
		}
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return out
}
