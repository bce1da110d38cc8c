package awse2e

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// Tags the AWS provider puts on what it launches.
const (
	TagNodePool  = "karpenter.sh/nodepool"
	TagNodeClaim = "karpenter.sh/nodeclaim"
	TagNodeClass = "karpenter.k8s.aws/ec2nodeclass"
)

// AWSPool is the v1 document's NodePool (DefaultAWSNodePool) renamed, on
// the given EC2NodeClass, for pods that select it by name.
func AWSPool(name, class string) *v1.NodePool {
	np := localcluster.DefaultAWSNodePool()
	np.Name = name
	np.Spec.Template.Spec.NodeClassRef.Name = class
	np.Spec.Weight = nil
	return np
}

// WithRequirement adds a requirement to the pool's template.
func WithRequirement(np *v1.NodePool, key string, op corev1.NodeSelectorOperator, minValues *int, values ...string) *v1.NodePool {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: minValues})
	return np
}

// Deployment returns a Deployment of pause pods requesting cpu and memory,
// pinned to a NodePool.
func Deployment(ns, name, pool string, replicas int32, cpu, memory string) *appsv1.Deployment {
	d := workloads.Deployment(ns, name, replicas, cpu, memory)
	d.Spec.Template.Spec.NodeSelector = map[string]string{v1.NodePoolLabelKey: pool}
	return d
}

// OneNodeEach gives each of the Deployment's pods a node of its own.
func OneNodeEach(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
	return d
}

// InstanceIDOf returns the instance id of an aws:///<zone>/<id> provider ID.
func InstanceIDOf(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 {
		return ""
	}
	return providerID[i+1:]
}
