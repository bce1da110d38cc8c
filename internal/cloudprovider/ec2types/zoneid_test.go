package ec2types

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

func TestZoneIDRequirement(t *testing.T) {
	ids := map[string]string{"z1": "id1", "z2": "id2"}
	cases := map[string]struct {
		offerings []cloudprovider.Offering
		want      string
	}{
		"available zones with IDs": {
			offerings: []cloudprovider.Offering{
				{Zone: "z2", CapacityType: "spot", Available: true},
				{Zone: "z1", CapacityType: "spot", Available: false},
				{Zone: "z2", CapacityType: "on-demand", Available: true},
				{Zone: "z3", CapacityType: "on-demand", Available: true},
			},
			want: "topology.k8s.aws/zone-id In [id2]",
		},
		"none available admits nothing": {
			offerings: []cloudprovider.Offering{{Zone: "z1", CapacityType: "spot"}},
			want:      "topology.k8s.aws/zone-id In",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ZoneIDRequirement(tc.offerings, ids).String()); diff != "" {
				t.Errorf("ZoneIDRequirement (-want +got):\n%s", diff)
			}
		})
	}
}
