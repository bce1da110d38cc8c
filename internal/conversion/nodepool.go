package conversion

import (
	"encoding/json"
	"fmt"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// NodePoolToV1 converts a v1beta1 NodePool to v1.
//
//  1. disruption.expireAfter moves to spec.template.spec.expireAfter.
//  2. WhenUnderutilized becomes WhenEmptyOrUnderutilized with consolidateAfter
//     0s (v1beta1 consolidated at once and forbade a duration).
//  3. The kubelet block, which has no v1 NodePool field, is kept as JSON in the
//     v1beta1-kubelet-conversion annotation, where the AWS provider reads it.
//  4. nodeClassRef apiVersion becomes group; the v1beta1 reference is kept in
//     the v1beta1-nodeclass-reference annotation when v1 cannot reproduce it.
//  5. The v1 values kept in the v1-fields annotation by an earlier v1 -> v1beta1
//     conversion are restored, and the annotation removed.
//
// spec.template.spec.resources has no v1 field and is dropped; the v1beta1 CRD
// forbids it, as Karpenter's did.
func (c *Converter) NodePoolToV1(in *v1beta1.NodePool) (*v1.NodePool, error) {
	in = in.DeepCopy()
	out := &v1.NodePool{TypeMeta: typeMeta(v1.SchemeGroupVersion, "NodePool"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	kept := nodePoolV1Fields{}
	if _, err := popJSONAnnotation(annotations, V1FieldsAnnotationKey, &kept); err != nil {
		return nil, fmt.Errorf("converting NodePool %q to v1: %w", in.Name, err)
	}

	out.Spec.Weight = in.Spec.Weight
	out.Spec.Limits = in.Spec.Limits
	out.Spec.Template.ObjectMeta = in.Spec.Template.ObjectMeta
	spec := &out.Spec.Template.Spec
	spec.Taints = in.Spec.Template.Spec.Taints
	spec.StartupTaints = in.Spec.Template.Spec.StartupTaints
	spec.Requirements = in.Spec.Template.Spec.Requirements
	spec.ExpireAfter = in.Spec.Disruption.ExpireAfter
	spec.TerminationGracePeriod = kept.TerminationGracePeriod

	var err error
	spec.NodeClassRef, annotations, err = c.convertNodeClassRefToV1(in.Spec.Template.Spec.NodeClassRef, kept.NodeClassGroup, annotations)
	if err != nil {
		return nil, fmt.Errorf("converting NodePool %q to v1: %w", in.Name, err)
	}
	if annotations, err = kubeletToAnnotation(in.Spec.Template.Spec.Kubelet, annotations); err != nil {
		return nil, fmt.Errorf("converting NodePool %q to v1: %w", in.Name, err)
	}

	out.Spec.Disruption = disruptionToV1(in.Spec.Disruption)
	if kept.Disruption != nil && equal(disruptionToV1beta1(*kept.Disruption), withoutExpireAfter(in.Spec.Disruption)) {
		out.Spec.Disruption = *kept.Disruption
	}

	out.Status.Resources = in.Status.Resources
	out.Status.Conditions = in.Status.Conditions
	out.Spec.Replicas = kept.Replicas
	out.Status.Nodes = kept.Nodes
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}

// NodePoolToV1beta1 converts a v1 NodePool to v1beta1, the inverse of
// NodePoolToV1: the kubelet and the v1beta1 reference come back from their
// annotations, and every v1 value v1beta1 cannot express (budget reasons,
// terminationGracePeriod, a consolidateAfter that WhenUnderutilized cannot
// carry, the WhenUnderutilized spelling, the Balanced policy and its
// consolidationThreshold, a static pool's replicas, status.nodes) goes into
// the v1-fields annotation.
func (c *Converter) NodePoolToV1beta1(in *v1.NodePool) (*v1beta1.NodePool, error) {
	in = in.DeepCopy()
	out := &v1beta1.NodePool{TypeMeta: typeMeta(v1beta1.SchemeGroupVersion, "NodePool"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	delete(annotations, V1FieldsAnnotationKey)

	out.Spec.Weight = in.Spec.Weight
	out.Spec.Limits = in.Spec.Limits
	out.Spec.Template.ObjectMeta = in.Spec.Template.ObjectMeta
	from := &in.Spec.Template.Spec
	spec := &out.Spec.Template.Spec
	spec.Taints = from.Taints
	spec.StartupTaints = from.StartupTaints
	spec.Requirements = from.Requirements
	spec.NodeClassRef = c.convertNodeClassRefToV1beta1(from.NodeClassRef, annotations)
	kubelet, err := kubeletFromAnnotation(annotations)
	if err != nil {
		return nil, fmt.Errorf("converting NodePool %q to v1beta1: %w", in.Name, err)
	}
	spec.Kubelet = kubelet

	out.Spec.Disruption = disruptionToV1beta1(in.Spec.Disruption)
	out.Spec.Disruption.ExpireAfter = from.ExpireAfter
	out.Status.Resources = in.Status.Resources
	out.Status.Conditions = in.Status.Conditions

	kept := nodePoolV1Fields{TerminationGracePeriod: from.TerminationGracePeriod, Nodes: in.Status.Nodes, NodeClassGroup: versionedGroup(from.NodeClassRef),
		Replicas: in.Spec.Replicas}
	if !equal(disruptionToV1(out.Spec.Disruption), in.Spec.Disruption) {
		kept.Disruption = &in.Spec.Disruption
	}
	if kept != (nodePoolV1Fields{}) {
		if annotations, err = setJSONAnnotation(annotations, V1FieldsAnnotationKey, kept); err != nil {
			return nil, fmt.Errorf("converting NodePool %q to v1beta1: %w", in.Name, err)
		}
	}
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}

// disruptionToV1 maps the v1beta1 disruption block (except expireAfter, which
// moves to the template) to v1.
func disruptionToV1(in v1beta1.Disruption) v1.Disruption {
	out := v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicy(in.ConsolidationPolicy)}
	if in.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenUnderutilized {
		out.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	switch {
	case in.ConsolidateAfter != nil:
		out.ConsolidateAfter = *in.ConsolidateAfter
	case in.ConsolidationPolicy != v1beta1.ConsolidationPolicyWhenEmpty:
		// WhenUnderutilized (or the unset policy, which defaults to it)
		// consolidated as soon as it could: v1 spells that 0s.
		out.ConsolidateAfter = v1.MustParseNillableDuration("0s")
	}
	for _, b := range in.Budgets {
		out.Budgets = append(out.Budgets, v1.Budget{Nodes: b.Nodes, Schedule: b.Schedule, Duration: b.Duration})
	}
	return out
}

// disruptionToV1beta1 maps the v1 disruption block to v1beta1, leaving
// expireAfter unset. Both v1 spellings of the under-utilization policy, and
// Balanced (which v1beta1 lacks, and which consolidates a subset of what
// WhenUnderutilized does), become WhenUnderutilized; its consolidateAfter
// survives only as Never, the one value the v1beta1 CRD allows with that
// policy. Budget reasons and consolidationThreshold are dropped.
func disruptionToV1beta1(in v1.Disruption) v1beta1.Disruption {
	out := v1beta1.Disruption{ConsolidationPolicy: v1beta1.ConsolidationPolicy(in.ConsolidationPolicy)}
	switch in.ConsolidationPolicy {
	case v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyWhenUnderutilized, v1.ConsolidationPolicyBalanced:
		out.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
	}
	if out.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenEmpty || in.ConsolidateAfter.IsNever() {
		after := in.ConsolidateAfter
		out.ConsolidateAfter = &after
	}
	for _, b := range in.Budgets {
		out.Budgets = append(out.Budgets, v1beta1.Budget{Nodes: b.Nodes, Schedule: b.Schedule, Duration: b.Duration})
	}
	return out
}

// withoutExpireAfter returns d with expireAfter cleared, the part of the
// v1beta1 block that disruptionToV1beta1 produces.
func withoutExpireAfter(d v1beta1.Disruption) v1beta1.Disruption {
	d.ExpireAfter = v1.NillableDuration{}
	return d
}

// kubeletToAnnotation records a v1beta1 kubelet block in the
// v1beta1-kubelet-conversion annotation, or removes the annotation when there
// is no kubelet block.
func kubeletToAnnotation(kubelet *v1beta1.KubeletConfiguration, annotations map[string]string) (map[string]string, error) {
	if kubelet == nil {
		delete(annotations, v1.KubeletCompatibilityAnnotationKey)
		return annotations, nil
	}
	return setJSONAnnotation(annotations, v1.KubeletCompatibilityAnnotationKey, kubelet)
}

// kubeletFromAnnotation removes the v1beta1-kubelet-conversion annotation and
// returns the kubelet block it holds. A value that does not decode is an
// error: dropping it would lose the kubelet settings on the next write.
func kubeletFromAnnotation(annotations map[string]string) (*v1beta1.KubeletConfiguration, error) {
	raw, ok := annotations[v1.KubeletCompatibilityAnnotationKey]
	if !ok {
		return nil, nil
	}
	delete(annotations, v1.KubeletCompatibilityAnnotationKey)
	kubelet := &v1beta1.KubeletConfiguration{}
	if err := json.Unmarshal([]byte(raw), kubelet); err != nil {
		return nil, fmt.Errorf("decoding annotation %q: %w", v1.KubeletCompatibilityAnnotationKey, err)
	}
	return kubelet, nil
}
