package aws_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
)

// The shared harness (the cluster, each test's suite, the objects and
// reads both AWS end-to-end packages use) is internal/testing/awse2e;
// what only this package's tests need is here.

// setRequirement replaces the values of the pool's requirement on key.
func setRequirement(np *v1.NodePool, key string, values ...string) *v1.NodePool {
	for i, r := range np.Spec.Template.Spec.Requirements {
		if r.Key == key {
			np.Spec.Template.Spec.Requirements[i].Values = values
			return np
		}
	}
	return awse2e.WithRequirement(np, key, corev1.NodeSelectorOpIn, nil, values...)
}

func nodeBudget(nodes string) v1.Budget { return v1.Budget{Nodes: intstr.Parse(nodes)} }

// listNodes lists every Node; nil when the list fails (a poll retries).
func listNodes(ctx context.Context) []corev1.Node {
	list := &corev1.NodeList{}
	if err := cluster.Client.List(ctx, list); err != nil {
		return nil
	}
	return list.Items
}

// instancesByID snapshots the endpoint's instances by id.
func instancesByID() map[string]ec2.Instance {
	out := map[string]ec2.Instance{}
	for _, inst := range cluster.AWS.EC2().Instances() {
		out[inst.ID] = inst
	}
	return out
}
