package kwok

// The kwok provider's permissions, generated into
// charts/dovetail/files/rbac/kwok/role.yaml (the chart's provider
// ClusterRole with cloudProvider kwok).

// Its NodeClass, and the Nodes it registers in place of a kubelet.
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.kwok.sh,resources=kwoknodeclasses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=create
