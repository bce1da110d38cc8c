package ec2types

import (
	"slices"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// LabelTopologyZoneID is the AWS zone ID of a node (for example use1-az1),
// which, unlike the zone name, is the same physical zone in every account.
const LabelTopologyZoneID = "topology.k8s.aws/zone-id"

// ZoneIDRequirement returns LabelTopologyZoneID In the IDs, per zoneIDs
// (zone name -> zone ID), of the zones of the available offerings, in
// offering order; zones without a known ID are left out. Like
// OfferingRequirements it admits nothing when no offering is available.
func ZoneIDRequirement(offerings []cloudprovider.Offering, zoneIDs map[string]string) requirements.Requirement {
	var ids []string
	for _, o := range offerings {
		id, ok := zoneIDs[o.Zone]
		if !o.Available || !ok || id == "" || slices.Contains(ids, id) {
			continue
		}
		ids = append(ids, id)
	}
	return requirements.In(LabelTopologyZoneID, ids...)
}
