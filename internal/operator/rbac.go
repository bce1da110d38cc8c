package operator

// The operator's own permissions, generated into the chart with the
// controllers' (charts/dovetail/files/rbac/core/role.yaml).

// Events the recorder emits on NodePools, NodeClaims, Nodes and Pods.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Leader election on a Lease in the release namespace ("system" is replaced
// by the chart): client-go's LeaseLock gets, creates and updates it. Create
// cannot be limited to a name.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;update,resourceNames=dovetail-leader-election
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=create
