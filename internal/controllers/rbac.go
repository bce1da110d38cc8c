package controllers

// The permissions every controller built by NewControllers needs, whatever
// the cloud provider: `make generate` turns these markers into
// charts/dovetail/files/rbac/core/role.yaml (controller-gen rbac), which the
// chart binds to its ServiceAccount. Keep them to what the code calls: the
// chart test (test/e2e/chart) runs the controller with exactly these rights.

// NodePools: read, status (conditions, resources), and the hash annotation.
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools/status,verbs=get;update;patch

// NodeClaims: launched, tracked, disrupted and deleted.
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims/status,verbs=get;update;patch

// Nodes: registration (labels, taints, finalizer), disruption taints, deletion.
// Nodes are created by the kubelet (or the kwok provider, which asks for it).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch;delete

// Pods: the provisioning trigger and the cluster state; drained by eviction.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create

// What the scheduling simulation reads: namespaces (for pod affinity
// namespace selectors), volumes and their topology, disruption budgets,
// daemon sets and the LimitRanges that size their pods, and replica sets
// (how many replicas are still to be created, for EarlyProvisioning).
// +kubebuilder:rbac:groups="",resources=namespaces;persistentvolumes;persistentvolumeclaims;limitranges,verbs=get;list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;volumeattachments,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets;replicasets,verbs=get;list;watch
