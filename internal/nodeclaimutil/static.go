package nodeclaimutil

import (
	"cmp"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// ForStaticPool plans one NodeClaim of a static NodePool (spec.replicas),
// which is launched for no pod: its requirements are the pool's (template
// requirements and labels, and karpenter.sh/nodepool), narrowed to the
// instance types whose labels the pool allows and that have an available
// offering in a zone and capacity type the pool allows, cheapest first (by
// that offering, then by name), at most maxTypes of them (0: no cap), and
// to the zones and capacity types of those offerings. The cloud provider
// launches the cheapest of them, as for any NodeClaim. It requests nothing,
// so any of the types fits. Render the result with FromPlan.
//
// It fails when the pool's requirements are invalid or no instance type
// can be launched for them.
func ForStaticPool(pool simulator.NodePool, maxTypes int) (*simulator.NewNodeClaim, error) {
	np := pool.NodePool
	reqs, err := requirements.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements)
	if err != nil {
		return nil, fmt.Errorf("reading nodepool %s requirements: %w", np.Name, err)
	}
	reqs = reqs.Intersect(requirements.FromLabels(np.Spec.Template.ObjectMeta.Labels)).
		Add(requirements.In(v1.NodePoolLabelKey, np.Name))
	if err := reqs.Satisfiable(); err != nil {
		return nil, fmt.Errorf("nodepool %s requirements: %w", np.Name, err)
	}
	allowed := func(o cloudprovider.Offering) bool {
		if zone, ok := reqs.Get(corev1.LabelTopologyZone); ok && !zone.Has(o.Zone) {
			return false
		}
		ct, ok := reqs.Get(v1.CapacityTypeLabelKey)
		return !ok || ct.Has(o.CapacityType)
	}

	type option struct {
		it    *cloudprovider.InstanceType
		price float64
	}
	var options []option
	for _, it := range pool.InstanceTypes {
		if it == nil || it.Requirements.Intersects(reqs) != nil {
			continue
		}
		if o, ok := it.CheapestOffering(allowed); ok {
			options = append(options, option{it: it, price: o.Price})
		}
	}
	if len(options) == 0 {
		return nil, fmt.Errorf("no instance type of nodepool %s has an available offering its requirements allow (%d types offered)", np.Name, len(pool.InstanceTypes))
	}
	slices.SortStableFunc(options, func(a, b option) int {
		return cmp.Or(cmp.Compare(a.price, b.price), cmp.Compare(a.it.Name, b.it.Name))
	})
	if maxTypes > 0 && len(options) > maxTypes {
		options = options[:maxTypes]
	}

	claim := &simulator.NewNodeClaim{NodePool: np.Name, Price: options[0].price, Requests: corev1.ResourceList{}}
	names := make([]string, 0, len(options))
	var zones, capacityTypes []string
	for _, opt := range options {
		claim.InstanceTypes = append(claim.InstanceTypes, opt.it)
		names = append(names, opt.it.Name)
		for _, o := range opt.it.Offerings {
			if o.Available && allowed(o) {
				zones = appendNew(zones, o.Zone)
				capacityTypes = appendNew(capacityTypes, o.CapacityType)
			}
		}
	}
	narrow := []requirements.Requirement{requirements.In(corev1.LabelInstanceTypeStable, names...)}
	if len(zones) > 0 {
		narrow = append(narrow, requirements.In(corev1.LabelTopologyZone, zones...))
	}
	if len(capacityTypes) > 0 {
		narrow = append(narrow, requirements.In(v1.CapacityTypeLabelKey, capacityTypes...))
	}
	claim.Requirements = reqs.Add(narrow...)
	return claim, nil
}

func appendNew(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
