package aws

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// withReserved returns copies of the named catalog types, each with the
// given reserved offerings added (and its requirements widened as the
// instance-type provider does).
func withReserved(t *testing.T, offerings map[string][]cloudprovider.Offering) []*cloudprovider.InstanceType {
	t.Helper()
	var out []*cloudprovider.InstanceType
	for _, it := range catalogTypes(t) {
		extra, ok := offerings[it.Name]
		if !ok {
			continue
		}
		cp := &cloudprovider.InstanceType{Name: it.Name, Capacity: it.Capacity, Overhead: it.Overhead,
			Offerings: append(slices.Clone(it.Offerings), extra...)}
		cp.Requirements = it.Requirements.Without(corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey).Add(ec2types.OfferingRequirements(cp.Offerings)...)
		out = append(out, cp)
	}
	return out
}

func reservedOffering(zone, id string, capacity int) cloudprovider.Offering {
	return cloudprovider.Offering{Zone: zone, CapacityType: karpv1.CapacityTypeReserved, Price: 1e-8, Available: capacity > 0, ReservationID: id, ReservationCapacity: capacity}
}

func TestReservedLaunchPlan(t *testing.T) {
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	nc := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{CapacityReservations: []awsv1.CapacityReservation{
		{ID: "cr-a1", ReservationType: awsv1.CapacityReservationTypeDefault},
		{ID: "cr-a2", ReservationType: awsv1.CapacityReservationTypeDefault},
		{ID: "cr-b", ReservationType: awsv1.CapacityReservationTypeDefault},
		{ID: "cr-block", ReservationType: awsv1.CapacityReservationTypeCapacityBlock},
		{ID: "cr-block2", ReservationType: awsv1.CapacityReservationTypeCapacityBlock},
	}}}
	all := []string{"reserved", "spot", "on-demand"}
	cases := map[string]struct {
		offerings        map[string][]cloudprovider.Offering
		capacityTypes    []string
		wantCapacityType string
		wantType         string
		wantOfferings    []string
	}{
		"reserved before spot": {
			offerings:        map[string][]cloudprovider.Offering{"m5.large": {reservedOffering("us-east-1a", "cr-a1", 1)}, "c5.large": nil},
			capacityTypes:    all,
			wantCapacityType: "reserved", wantType: "default", wantOfferings: []string{"m5.large/us-east-1a/cr-a1"},
		},
		"the reservation with the most room per type and zone": {
			offerings: map[string][]cloudprovider.Offering{"m5.large": {
				reservedOffering("us-east-1a", "cr-a1", 1), reservedOffering("us-east-1a", "cr-a2", 3), reservedOffering("us-east-1b", "cr-b", 1),
			}},
			capacityTypes:    all,
			wantCapacityType: "reserved", wantType: "default",
			wantOfferings: []string{"m5.large/us-east-1a/cr-a2", "m5.large/us-east-1b/cr-b"},
		},
		"on-demand reservations before capacity blocks": {
			offerings: map[string][]cloudprovider.Offering{
				"m5.large": {reservedOffering("us-east-1a", "cr-block", 2)},
				"c5.large": {reservedOffering("us-east-1b", "cr-b", 1)},
			},
			capacityTypes:    all,
			wantCapacityType: "reserved", wantType: "default", wantOfferings: []string{"c5.large/us-east-1b/cr-b"},
		},
		"one capacity block offering": {
			offerings: map[string][]cloudprovider.Offering{
				"m5.large": {reservedOffering("us-east-1a", "cr-block", 2)},
				"c5.large": {reservedOffering("us-east-1b", "cr-block2", 1)},
			},
			capacityTypes:    all,
			wantCapacityType: "reserved", wantType: "capacity-block", wantOfferings: []string{"c5.large/us-east-1b/cr-block2"},
		},
		"a full reservation falls to spot": {
			offerings:        map[string][]cloudprovider.Offering{"m5.large": {reservedOffering("us-east-1a", "cr-a1", 0)}},
			capacityTypes:    all,
			wantCapacityType: "spot",
		},
		"reserved not allowed": {
			offerings:        map[string][]cloudprovider.Offering{"m5.large": {reservedOffering("us-east-1a", "cr-a1", 1)}},
			capacityTypes:    []string{"on-demand"},
			wantCapacityType: "on-demand",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			its := withReserved(t, tc.offerings)
			var names []string
			for _, it := range its {
				names = append(names, it.Name)
			}
			r := reqs(t, in(corev1.LabelInstanceTypeStable, names...), in(karpv1.CapacityTypeLabelKey, tc.capacityTypes...))
			candidates := compatible(its, r, requests)
			ct := chooseCapacityType(candidates, r)
			if ct != tc.wantCapacityType {
				t.Fatalf("capacity type = %s, want %s", ct, tc.wantCapacityType)
			}
			if ct != karpv1.CapacityTypeReserved {
				return
			}
			plan := reservedPlan(launchPlan(candidates, r, ct), nc)
			var got []string
			for _, o := range plan.offerings {
				got = append(got, o.InstanceType+"/"+o.Zone+"/"+o.ReservationID)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantOfferings, got); diff != "" {
				t.Errorf("offerings (-want +got):\n%s", diff)
			}
			if plan.reservationType != tc.wantType {
				t.Errorf("reservation type = %s, want %s", plan.reservationType, tc.wantType)
			}
			for _, id := range plan.reservations() {
				for _, it := range plan.typesOf(id) {
					if !slices.ContainsFunc(plan.offerings, func(o instance.Offering) bool { return o.InstanceType == it.Name && o.ReservationID == id }) {
						t.Errorf("typesOf(%s) has %s, which has no offering there", id, it.Name)
					}
				}
			}
		})
	}
}
