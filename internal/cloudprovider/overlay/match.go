package overlay

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// offeringKeys are the labels that differ between the offerings of one
// instance type; the type's own requirements list every value they take.
var offeringKeys = map[string]bool{
	corev1.LabelTopologyZone:         true,
	v1.CapacityTypeLabelKey:          true,
	awsv1.LabelCapacityReservationID: true,
}

// Matching returns the indices of the offerings of it, offered to pool,
// that reqs admit (see the package documentation); none when the type
// itself does not match.
func Matching(pool *v1.NodePool, it *cloudprovider.InstanceType, reqs requirements.Requirements) []int {
	var offeringReqs []requirements.Requirement
	for _, r := range reqs.List() {
		if offeringKeys[r.Key()] {
			offeringReqs = append(offeringReqs, r)
			continue
		}
		if !typeAdmits(pool, it, r) {
			return nil
		}
	}
	var out []int
	for i, o := range it.Offerings {
		if offeringAdmits(o, offeringReqs) {
			out = append(out, i)
		}
	}
	return out
}

// typeAdmits reports whether r admits the instance type in the pool: by
// the pool's name, the type's requirement on the key, or the label the
// pool's template gives every node.
func typeAdmits(pool *v1.NodePool, it *cloudprovider.InstanceType, r requirements.Requirement) bool {
	if r.Key() == v1.NodePoolLabelKey {
		return r.Has(pool.Name)
	}
	if tr, ok := it.Requirements.Get(r.Key()); ok {
		if !tr.Intersect(r).Satisfiable() {
			return false
		}
		if v, labelled := pool.Spec.Template.ObjectMeta.Labels[r.Key()]; labelled && !r.Has(v) {
			return false
		}
		return true
	}
	if v, ok := pool.Spec.Template.ObjectMeta.Labels[r.Key()]; ok {
		return r.Has(v)
	}
	return r.AllowsAbsent()
}

// offeringAdmits reports whether every offering requirement admits o.
func offeringAdmits(o cloudprovider.Offering, reqs []requirements.Requirement) bool {
	for _, r := range reqs {
		var value string
		switch r.Key() {
		case corev1.LabelTopologyZone:
			value = o.Zone
		case v1.CapacityTypeLabelKey:
			value = o.CapacityType
		default:
			value = o.ReservationID
		}
		if value == "" {
			if !r.AllowsAbsent() {
				return false
			}
			continue
		}
		if !r.Has(value) {
			return false
		}
	}
	return true
}

// offeringKey identifies an offering among its type's.
func offeringKey(o cloudprovider.Offering) string {
	return o.Zone + "/" + o.CapacityType + "/" + o.ReservationID
}
