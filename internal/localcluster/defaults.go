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
