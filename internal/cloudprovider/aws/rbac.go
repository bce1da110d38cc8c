package aws

// The AWS provider's permissions, generated into
// charts/dovetail/files/rbac/aws/role.yaml (the chart's provider ClusterRole
// and the kube-system Role with cloudProvider aws).

// EC2NodeClasses: resolved into status, with a finalizer for cleanup.
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=karpenter.k8s.aws,resources=ec2nodeclasses/status,verbs=get;update;patch

// The kube-dns Service's cluster IP, read once for nodes' cluster DNS.
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=services,verbs=get,resourceNames=kube-dns
