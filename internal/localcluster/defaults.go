package localcluster

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
)

// DefaultName names the default KWOKNodeClass and NodePool.
const DefaultName = "default"

// DefaultNodeClass is the KWOKNodeClass of the default NodePool.
func DefaultNodeClass() *kwokv1alpha1.KWOKNodeClass {
	return &kwokv1alpha1.KWOKNodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: kwokv1alpha1.SchemeGroupVersion.String(), Kind: "KWOKNodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultName},
	}
}

// DefaultNodePool is a general-purpose NodePool, shaped like the upstream
// general-purpose example: current-generation c, m and r instances (amd64
// and arm64, spot and on-demand), at most 1000 vCPUs, consolidating nodes
// that stayed under-used for a minute.
func DefaultNodePool() *v1.NodePool {
	return &v1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultName},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: DefaultName},
				Requirements: []v1.NodeSelectorRequirementWithMinValues{
					{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
					{Key: awsv1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
					{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Linux)}},
					{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot, v1.CapacityTypeOnDemand}},
				},
				ExpireAfter: v1.MustParseNillableDuration("720h"),
			}},
			Disruption: v1.Disruption{
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    v1.MustParseNillableDuration("1m"),
			},
			Limits: v1.Limits{corev1.ResourceCPU: resource.MustParse("1000")},
			Weight: ptr.To[int32](10),
		},
	}
}

// DefaultEC2NodeClass is the v1 API document's EC2NodeClass with the
// discovery tag and role filled in for the local AWS endpoint's account:
// the newest AL2023 AMIs, the subnets and security groups tagged
// karpenter.sh/discovery: <cluster>, and the role KarpenterNodeRole-<cluster>.
func DefaultEC2NodeClass(clusterName string) *awsv1.EC2NodeClass {
	discovery := map[string]string{"karpenter.sh/discovery": clusterName}
	return &awsv1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: metav1.ObjectMeta{Name: DefaultName},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: discovery}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: discovery}},
			Role:                       "KarpenterNodeRole-" + clusterName,
		},
	}
}

// DefaultAWSNodePool is DefaultNodePool on the default EC2NodeClass.
func DefaultAWSNodePool() *v1.NodePool {
	np := DefaultNodePool()
	np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: DefaultName}
	return np
}
