package v1

import corev1 "k8s.io/api/core/v1"

// Well-known labels, annotations, taints and finalizers of the karpenter.sh group.
// Users' selectors, dashboards and tooling depend on these exact names.
const (
	// NodePoolLabelKey names the NodePool that owns a NodeClaim or Node.
	NodePoolLabelKey = Group + "/nodepool"
	// CapacityTypeLabelKey carries the capacity type (spot, on-demand, reserved) of a node.
	CapacityTypeLabelKey = Group + "/capacity-type"
	// NodeRegisteredLabelKey is set to "true" once a Node has joined and been matched to its NodeClaim.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeInitializedLabelKey is set to "true" once a Node is ready for pods.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeClaimLabelKey would name a node's NodeClaim; it is reserved and never a requirement.
	NodeClaimLabelKey = Group + "/nodeclaim"

	// DoNotDisruptAnnotationKey on a pod or node blocks voluntary disruption of the node.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// NodePoolHashAnnotationKey records the hash of the NodePool template a NodeClaim was made from.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey records the version of the hashing scheme.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey records when a draining node will be forcibly terminated.
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// StoredVersionMigratedAnnotationKey marks objects rewritten at the storage version.
	StoredVersionMigratedAnnotationKey = Group + "/stored-version-migrated"

	// TerminationFinalizer keeps NodeClaims and Nodes until their instance is gone.
	TerminationFinalizer = Group + "/termination"

	// DisruptedTaintKey marks a node that is being disrupted (NoSchedule).
	DisruptedTaintKey = Group + "/disrupted"
	// UnregisteredTaintKey marks a node that has not registered yet (NoExecute).
	UnregisteredTaintKey = Group + "/unregistered"
)

// KnownEphemeralTaintKeys are the taints a starting node sheds on its own
// (kubelet and node-lifecycle taints, the cloud-controller's uninitialized
// taint, and Dovetail's own unregistered taint). A NodeClaim is initialized
// only once they are gone, and the scheduling simulator ignores them on
// nodes that are not initialized yet.
var KnownEphemeralTaintKeys = []string{
	"node.kubernetes.io/not-ready",
	"node.kubernetes.io/unreachable",
	"node.cloudprovider.kubernetes.io/uninitialized",
	UnregisteredTaintKey,
}

// Capacity types of the karpenter.sh/capacity-type label.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Compatibility annotations written by the v1beta1 <-> v1 conversion so that
// fields with no v1 home survive a round trip.
const (
	KubeletCompatibilityAnnotationKey = "compatibility.karpenter.sh/v1beta1-kubelet-conversion"
	NodeClassReferenceAnnotationKey   = "compatibility.karpenter.sh/v1beta1-nodeclass-reference"
)

// DisruptedNoScheduleTaint returns the taint put on a node while it is being disrupted.
func DisruptedNoScheduleTaint() corev1.Taint {
	return corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
}

// UnregisteredNoExecuteTaint returns the taint a node carries until it registers.
func UnregisteredNoExecuteTaint() corev1.Taint {
	return corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
}

// Extra operators that Karpenter adds to the corev1 node-selector operators.
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)
