package webhook

// The conversion webhook's permissions, generated into
// charts/dovetail/files/rbac/webhook/role.yaml; the chart grants them only
// with webhook.enabled.

// The certificate rotator injects the CA into the multi-version CRDs.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=update,resourceNames=nodepools.karpenter.sh;nodeclaims.karpenter.sh;ec2nodeclasses.karpenter.k8s.aws

// Converting a v1beta1 NodeClaim reads its NodePool (expireAfter).
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodepools,verbs=get

// The certificate Secret in the release namespace: created when missing,
// filled and renewed by the rotator.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=update,resourceNames=dovetail-webhook-cert
