package conversion

import (
	"context"
	"fmt"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// NodeClaimToV1 converts a v1beta1 NodeClaim to v1.
//
//  1. spec.expireAfter, which v1beta1 kept on the NodePool, is the value kept
//     in the v1-fields annotation by an earlier v1 -> v1beta1 conversion, else
//     the template expireAfter of the NodePool named by the karpenter.sh/nodepool
//     label (looked up through c.NodePools), else the CRD default 720h.
//  2. The kubelet block goes into the v1beta1-kubelet-conversion annotation.
//  3. nodeClassRef as for a NodePool (see NodePoolToV1).
//  4. terminationGracePeriod and status.lastPodEventTime come back from the
//     v1-fields annotation, which is removed.
func (c *Converter) NodeClaimToV1(ctx context.Context, in *v1beta1.NodeClaim) (*v1.NodeClaim, error) {
	in = in.DeepCopy()
	out := &v1.NodeClaim{TypeMeta: typeMeta(v1.SchemeGroupVersion, "NodeClaim"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	kept := nodeClaimV1Fields{}
	if _, err := popJSONAnnotation(annotations, V1FieldsAnnotationKey, &kept); err != nil {
		return nil, fmt.Errorf("converting NodeClaim %q to v1: %w", in.Name, err)
	}

	spec := &out.Spec
	spec.Taints = in.Spec.Taints
	spec.StartupTaints = in.Spec.StartupTaints
	spec.Requirements = in.Spec.Requirements
	spec.Resources = v1.ResourceRequirements{Requests: in.Spec.Resources.Requests}
	spec.TerminationGracePeriod = kept.TerminationGracePeriod
	if kept.ExpireAfter != nil {
		spec.ExpireAfter = *kept.ExpireAfter
	} else {
		expireAfter, err := c.nodeClaimExpireAfter(ctx, in.Labels)
		if err != nil {
			return nil, fmt.Errorf("converting NodeClaim %q to v1: %w", in.Name, err)
		}
		spec.ExpireAfter = expireAfter
	}

	var err error
	spec.NodeClassRef, annotations, err = c.convertNodeClassRefToV1(in.Spec.NodeClassRef, kept.NodeClassGroup, annotations)
	if err != nil {
		return nil, fmt.Errorf("converting NodeClaim %q to v1: %w", in.Name, err)
	}
	if annotations, err = kubeletToAnnotation(in.Spec.Kubelet, annotations); err != nil {
		return nil, fmt.Errorf("converting NodeClaim %q to v1: %w", in.Name, err)
	}

	out.Status = v1.NodeClaimStatus{
		NodeName:    in.Status.NodeName,
		ProviderID:  in.Status.ProviderID,
		ImageID:     in.Status.ImageID,
		Capacity:    in.Status.Capacity,
		Allocatable: in.Status.Allocatable,
		Conditions:  in.Status.Conditions,
	}
	if kept.LastPodEventTime != nil {
		out.Status.LastPodEventTime = *kept.LastPodEventTime
	}
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}

// NodeClaimToV1beta1 converts a v1 NodeClaim to v1beta1, the inverse of
// NodeClaimToV1. expireAfter is kept in the v1-fields annotation only when it
// differs from what NodeClaimToV1 would derive from the NodePool, so that a
// NodeClaim that follows its NodePool converts without the annotation; when
// the NodePool cannot be read it is always kept.
func (c *Converter) NodeClaimToV1beta1(ctx context.Context, in *v1.NodeClaim) (*v1beta1.NodeClaim, error) {
	in = in.DeepCopy()
	out := &v1beta1.NodeClaim{TypeMeta: typeMeta(v1beta1.SchemeGroupVersion, "NodeClaim"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	delete(annotations, V1FieldsAnnotationKey)

	spec := &out.Spec
	spec.Taints = in.Spec.Taints
	spec.StartupTaints = in.Spec.StartupTaints
	spec.Requirements = in.Spec.Requirements
	spec.Resources = v1beta1.ResourceRequirements{Requests: in.Spec.Resources.Requests}
	spec.NodeClassRef = c.convertNodeClassRefToV1beta1(in.Spec.NodeClassRef, annotations)
	kubelet, err := kubeletFromAnnotation(annotations)
	if err != nil {
		return nil, fmt.Errorf("converting NodeClaim %q to v1beta1: %w", in.Name, err)
	}
	spec.Kubelet = kubelet

	out.Status = v1beta1.NodeClaimStatus{
		NodeName:    in.Status.NodeName,
		ProviderID:  in.Status.ProviderID,
		ImageID:     in.Status.ImageID,
		Capacity:    in.Status.Capacity,
		Allocatable: in.Status.Allocatable,
		Conditions:  in.Status.Conditions,
	}

	kept := nodeClaimV1Fields{TerminationGracePeriod: in.Spec.TerminationGracePeriod, NodeClassGroup: versionedGroup(in.Spec.NodeClassRef)}
	if !in.Status.LastPodEventTime.IsZero() {
		kept.LastPodEventTime = &in.Status.LastPodEventTime
	}
	if derived, err := c.nodeClaimExpireAfter(ctx, in.Labels); err != nil || !equal(derived, in.Spec.ExpireAfter) {
		kept.ExpireAfter = &in.Spec.ExpireAfter
	}
	if kept != (nodeClaimV1Fields{}) {
		if annotations, err = setJSONAnnotation(annotations, V1FieldsAnnotationKey, kept); err != nil {
			return nil, fmt.Errorf("converting NodeClaim %q to v1beta1: %w", in.Name, err)
		}
	}
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}
