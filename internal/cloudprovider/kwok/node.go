package kwok

import (
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// newNode builds the Node of a claim's instance, handed to kwok.
//
// Labels, later ones winning: the claim's single-value requirements (for
// example a NodePool requirement team In [a]), the claim's labels, the
// instance type's labels, the offering's zone and capacity type, the
// hostname and the provider's partition, and the kubelet's beta os and arch
// labels. Taints: karpenter.sh/unregistered
// (the core removes it when it registers the Node), the claim's taints and
// startup taints. Capacity and allocatable come from the instance type. A
// claim that is stored (has a UID) owns the Node, as the core would make it
// at registration, so that the Node goes when the claim does.
func newNode(nodeClaim *v1.NodeClaim, reqs requirements.Requirements, chosen candidate, partition string) *corev1.Node {
	it, offering := chosen.instanceType, chosen.offering
	name := nodeClaim.Name
	labels := reqs.Labels()
	delete(labels, corev1.LabelHostname)
	maps.Copy(labels, nodeClaim.Labels)
	delete(labels, RegisterAfterLabelKey) // the claim's bookkeeping, not the node's
	maps.Copy(labels, it.Requirements.Labels())
	labels[corev1.LabelTopologyZone] = offering.Zone
	labels[v1.CapacityTypeLabelKey] = offering.CapacityType
	labels[corev1.LabelHostname] = name
	labels[PartitionLabelKey] = partition
	for _, l := range kubeletBetaLabels {
		if value, ok := labels[l.stable]; ok {
			labels[l.beta] = value
		}
	}

	annotations := map[string]string{KwokNodeAnnotationKey: KwokNodeAnnotationValue}
	if ref := nodeClaim.Spec.NodeClassRef; ref != nil {
		annotations[NodeClassAnnotationKey] = ref.Name
	}
	taints := []corev1.Taint{v1.UnregisteredNoExecuteTaint()}
	for _, t := range slices.Concat(nodeClaim.Spec.Taints, nodeClaim.Spec.StartupTaints) {
		if !hasTaint(taints, t) {
			taints = append(taints, t)
		}
	}
	node := &corev1.Node{
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
	if nodeClaim.UID != "" {
		node.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1.SchemeGroupVersion.String(),
			Kind:       "NodeClaim",
			Name:       nodeClaim.Name,
			UID:        nodeClaim.UID,
		}}
	}
	return node
}

// kubeletBetaLabels are the beta os and arch labels the kubelet writes next
// to the stable ones when it registers. A Node without them gets them from
// the kube-controller-manager's node lifecycle controller: one more write
// to every new Node from its eight workers, which the not-ready taint's
// removal queues behind. They are the Node's, not the claim's (fillClaim).
var kubeletBetaLabels = []betaLabel{
	{corev1.LabelOSStable, kubeletapis.LabelOS},
	{corev1.LabelArchStable, kubeletapis.LabelArch},
}

// betaLabel pairs a stable label key with its beta form.
type betaLabel struct{ stable, beta string }

// isKubeletBetaLabel reports whether key is one of kubeletBetaLabels' beta keys.
func isKubeletBetaLabel(key string) bool {
	return slices.ContainsFunc(kubeletBetaLabels, func(l betaLabel) bool { return l.beta == key })
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
// ID, capacity, allocatable, and the Node's labels except the hostname and
// the kubelet's beta os and arch labels (instance type, zone, capacity
// type, the instance-type labels, partition).
func fillClaim(nodeClaim *v1.NodeClaim, node *corev1.Node) *v1.NodeClaim {
	out := nodeClaim.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for key, value := range node.Labels {
		if key != corev1.LabelHostname && !isKubeletBetaLabel(key) {
			out.Labels[key] = value
		}
	}
	out.Status.ProviderID = node.Spec.ProviderID
	out.Status.Capacity = node.Status.Capacity.DeepCopy()
	out.Status.Allocatable = node.Status.Allocatable.DeepCopy()
	return out
}

// formatRegisterAfter renders a registration time as the value of
// RegisterAfterLabelKey: Unix nanoseconds, exact and a valid label value.
func formatRegisterAfter(t time.Time) string {
	return strconv.FormatInt(t.UnixNano(), 10)
}

// parseRegisterAfter reads a RegisterAfterLabelKey value.
func parseRegisterAfter(value string) (time.Time, error) {
	ns, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns).UTC(), nil
}
