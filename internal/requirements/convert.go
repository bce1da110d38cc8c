package requirements

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// NodeNameField is the key under which a node-selector term's matchFields on
// metadata.name (the only field Kubernetes supports there) is represented. It
// is not a label: only a node's name can satisfy it.
const NodeNameField = "metadata.name"

// FromLabels returns one single-value In requirement per label.
func FromLabels(labels map[string]string) Requirements {
	rs := make([]Requirement, 0, len(labels))
	for k, v := range labels {
		rs = append(rs, In(k, v))
	}
	return NewRequirements(rs...)
}

// FromNodeSelectorRequirements converts Kubernetes node-selector requirements
// (ANDed) into Requirements.
func FromNodeSelectorRequirements(nsrs ...corev1.NodeSelectorRequirement) (Requirements, error) {
	rs := make([]Requirement, 0, len(nsrs))
	var errs []error
	for _, nsr := range nsrs {
		r, err := New(nsr.Key, nsr.Operator, nsr.Values...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		rs = append(rs, r)
	}
	if err := errors.Join(errs...); err != nil {
		return Requirements{}, err
	}
	return NewRequirements(rs...), nil
}

// FromNodeSelectorTerm converts one node-selector term: its match expressions
// and its match fields (as NodeNameField). Kubernetes matches no node with an
// empty term, so an empty term is an error.
func FromNodeSelectorTerm(term corev1.NodeSelectorTerm) (Requirements, error) {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return Requirements{}, errors.New("empty node selector term matches no node")
	}
	nsrs := slices.Clone(term.MatchExpressions)
	for _, f := range term.MatchFields {
		if f.Key != NodeNameField {
			return Requirements{}, fmt.Errorf("unsupported match field %q", f.Key)
		}
		nsrs = append(nsrs, f)
	}
	return FromNodeSelectorRequirements(nsrs...)
}

// FromNodePoolRequirements converts a NodePool's (or NodeClaim's)
// requirements, minValues included.
func FromNodePoolRequirements(reqs []v1.NodeSelectorRequirementWithMinValues) (Requirements, error) {
	rs := make([]Requirement, 0, len(reqs))
	var errs []error
	for _, req := range reqs {
		r, err := New(req.Key, req.Operator, req.Values...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if req.MinValues != nil {
			if *req.MinValues < 1 {
				errs = append(errs, fmt.Errorf("requirement %s has minValues %d, want at least 1", req.Key, *req.MinValues))
				continue
			}
			r = r.WithMinValues(*req.MinValues)
		}
		rs = append(rs, r)
	}
	if err := errors.Join(errs...); err != nil {
		return Requirements{}, err
	}
	return NewRequirements(rs...), nil
}

// Alternatives is a disjunction: a node qualifies if it satisfies any member.
// It is how Kubernetes ORs the terms of a required node affinity.
type Alternatives []Requirements

// PodRequirements returns the node requirements a pod insists on: its
// nodeSelector ANDed with each term of its required node affinity, one
// alternative per term (a single alternative when it has no required
// affinity). Terms that cannot be converted are reported; if no term remains
// the pod can run nowhere and an error says why.
func PodRequirements(pod *corev1.Pod) (Alternatives, error) {
	base := FromLabels(pod.Spec.NodeSelector)
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return Alternatives{base}, nil
	}
	var alts Alternatives
	var errs []error
	for i, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		reqs, err := FromNodeSelectorTerm(term)
		if err != nil {
			errs = append(errs, fmt.Errorf("required node affinity term %d: %w", i, err))
			continue
		}
		alts = append(alts, base.Intersect(reqs))
	}
	if len(alts) == 0 {
		errs = append(errs, errors.New("required node affinity has no usable term"))
		return nil, errors.Join(errs...)
	}
	return alts, nil
}

// Preference is one weighted preferred node-affinity term.
type Preference struct {
	Weight       int32
	Requirements Requirements
}

// PodPreferences returns the pod's preferred node-affinity terms, heaviest
// first (stable for equal weights). Terms that cannot be converted are skipped
// and reported.
func PodPreferences(pod *corev1.Pod) ([]Preference, error) {
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil {
		return nil, nil
	}
	var prefs []Preference
	var errs []error
	for i, term := range aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		reqs, err := FromNodeSelectorTerm(term.Preference)
		if err != nil {
			errs = append(errs, fmt.Errorf("preferred node affinity term %d: %w", i, err))
			continue
		}
		prefs = append(prefs, Preference{Weight: term.Weight, Requirements: reqs})
	}
	slices.SortStableFunc(prefs, func(a, b Preference) int { return int(b.Weight) - int(a.Weight) })
	return prefs, errors.Join(errs...)
}

// IsWellKnown reports whether key is a label every Dovetail node gets from its
// NodePool or cloud provider (zone, region, instance type, architecture,
// operating system, capacity type, NodePool name, Windows build). A pod may
// require such a label of a NodePool that does not mention it: the provider
// sets the value when it launches the node.
func IsWellKnown(key string) bool {
	switch key {
	case corev1.LabelTopologyZone, corev1.LabelTopologyRegion, corev1.LabelInstanceTypeStable,
		corev1.LabelArchStable, corev1.LabelOSStable, corev1.LabelWindowsBuild,
		v1.CapacityTypeLabelKey, v1.NodePoolLabelKey:
		return true
	}
	return false
}
