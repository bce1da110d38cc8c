package testing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// NodePoolWrapper builds a NodePool.
type NodePoolWrapper struct{ v1.NodePool }

// MakeNodePool returns a NodePool with no requirements, taints, limits or
// weight, referencing a test NodeClass.
func MakeNodePool(name string) *NodePoolWrapper {
	return &NodePoolWrapper{v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-nodepool-" + name)},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.test.sh", Kind: "TestNodeClass", Name: "default"},
		}}},
	}}
}

// Obj returns a copy of the NodePool.
func (w *NodePoolWrapper) Obj() *v1.NodePool { return w.NodePool.DeepCopy() }

// Weight sets the weight.
func (w *NodePoolWrapper) Weight(n int32) *NodePoolWrapper {
	w.Spec.Weight = &n
	return w
}

// Req adds a requirement.
func (w *NodePoolWrapper) Req(key string, op corev1.NodeSelectorOperator, values ...string) *NodePoolWrapper {
	w.Spec.Template.Spec.Requirements = append(w.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	return w
}

// ReqMinValues adds a requirement with minValues.
func (w *NodePoolWrapper) ReqMinValues(key string, op corev1.NodeSelectorOperator, minValues int, values ...string) *NodePoolWrapper {
	w.Spec.Template.Spec.Requirements = append(w.Spec.Template.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: &minValues})
	return w
}

// Taint adds a taint pods must tolerate.
func (w *NodePoolWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodePoolWrapper {
	w.Spec.Template.Spec.Taints = append(w.Spec.Template.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// StartupTaint adds a startup taint.
func (w *NodePoolWrapper) StartupTaint(key, value string, effect corev1.TaintEffect) *NodePoolWrapper {
	w.Spec.Template.Spec.StartupTaints = append(w.Spec.Template.Spec.StartupTaints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// Limit sets a limit, for example Limit("cpu", "100") or Limit("nodes", "3").
func (w *NodePoolWrapper) Limit(name, qty string) *NodePoolWrapper {
	if w.Spec.Limits == nil {
		w.Spec.Limits = v1.Limits{}
	}
	w.Spec.Limits[corev1.ResourceName(name)] = resource.MustParse(qty)
	return w
}

// Label adds a template label.
func (w *NodePoolWrapper) Label(k, v string) *NodePoolWrapper {
	if w.Spec.Template.ObjectMeta.Labels == nil {
		w.Spec.Template.ObjectMeta.Labels = map[string]string{}
	}
	w.Spec.Template.ObjectMeta.Labels[k] = v
	return w
}
