package kwok

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Reason and message of the Ready=False condition of a Node that is still
// "booting", the way a kubelet reports a node whose runtime is not ready.
const (
	bootingReason  = "KubeletNotReady"
	bootingMessage = "simulated instance is booting; kwok takes over at %s"
)

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
// Otherwise it carries RegisterAfterAnnotationKey = now + delay and a
// Ready=False condition, and the registration controller hands it to kwok
// then. The condition keeps pods off the booting Node: the node lifecycle
// controller keeps the node.kubernetes.io/not-ready:NoSchedule taint (which
// the API server's admission puts on every new Node) while Ready is False,
// and would remove it from a Node without conditions.
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
	var conditions []corev1.NodeCondition
	if registrationDelay > 0 {
		registerAfter := now.Add(registrationDelay).UTC().Format(time.RFC3339Nano)
		annotations[RegisterAfterAnnotationKey] = registerAfter
		conditions = []corev1.NodeCondition{{
			Type:               corev1.NodeReady,
			Status:             corev1.ConditionFalse,
			Reason:             bootingReason,
			Message:            fmt.Sprintf(bootingMessage, registerAfter),
			LastHeartbeatTime:  metav1.NewTime(now),
			LastTransitionTime: metav1.NewTime(now),
		}}
	} else {
		annotations[KwokNodeAnnotationKey] = KwokNodeAnnotationValue
	}
	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint()}
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints) {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec:       corev1.NodeSpec{ProviderID: ProviderIDPrefix + name, Taints: taints},
		Status: corev1.NodeStatus{
			Conditions:  conditions,
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
