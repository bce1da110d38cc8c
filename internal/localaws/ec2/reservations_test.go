package ec2

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
)

// reservedTemplate creates a launch template that targets a reservation.
func (e *env) reservedTemplate(t *testing.T, name, reservationID string) {
	t.Helper()
	_, err := e.client.CreateLaunchTemplate(context.Background(), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String(e.images[0].ID),
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
				CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(reservationID)},
			},
		},
	})
	must(t, err)
}

func TestDescribeCapacityReservations(t *testing.T) {
	e := newEnv(t, 1)
	end := epoch.Add(48 * time.Hour)
	seeded := []CapacityReservation{
		{ID: "cr-0000000000000000a", InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 2, Tags: map[string]string{"team": "ml"}},
		{ID: "cr-0000000000000000b", InstanceType: "m5.xlarge", Zone: "us-east-1b", AvailableInstanceCount: 1, TotalInstanceCount: 4,
			InstanceMatchCriteria: "targeted", ReservationType: ReservationTypeCapacityBlock, EndDate: end, OwnerID: "210987654321"},
		{ID: "cr-0000000000000000c", InstanceType: "c5.large", Zone: "us-east-1c", AvailableInstanceCount: 3, Tags: map[string]string{"team": "web"}},
	}
	for _, cr := range seeded {
		_, err := e.svc.AddCapacityReservation(cr)
		must(t, err)
	}
	ids := func(out []ec2types.CapacityReservation) []string {
		var got []string
		for _, cr := range out {
			got = append(got, aws.ToString(cr.CapacityReservationId))
		}
		return got
	}
	cases := map[string]struct {
		in   ec2.DescribeCapacityReservationsInput
		want []string
	}{
		"all":           {want: []string{"cr-0000000000000000a", "cr-0000000000000000b", "cr-0000000000000000c"}},
		"by id":         {in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0000000000000000c"}}, want: []string{"cr-0000000000000000c"}},
		"by tag":        {in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{flt("tag:team", "ml")}}, want: []string{"cr-0000000000000000a"}},
		"by owner":      {in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{flt("owner-id", "210987654321")}}, want: []string{"cr-0000000000000000b"}},
		"by criteria":   {in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{flt("instance-match-criteria", "open"), flt("state", "active")}}, want: []string{"cr-0000000000000000a", "cr-0000000000000000c"}},
		"by type, zone": {in: ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{flt("instance-type", "m5.*"), flt("availability-zone", "us-east-1b")}}, want: []string{"cr-0000000000000000b"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := e.client.DescribeCapacityReservations(context.Background(), &tc.in)
			must(t, err)
			if diff := cmp.Diff(tc.want, ids(out.CapacityReservations)); diff != "" {
				t.Errorf("reservations (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("fields", func(t *testing.T) {
		out, err := e.client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0000000000000000b"}})
		must(t, err)
		cr := out.CapacityReservations[0]
		got := []any{aws.ToString(cr.InstanceType), aws.ToString(cr.AvailabilityZone), aws.ToString(cr.AvailabilityZoneId), aws.ToInt32(cr.AvailableInstanceCount),
			aws.ToInt32(cr.TotalInstanceCount), string(cr.InstanceMatchCriteria), string(cr.ReservationType), string(cr.State), aws.ToString(cr.OwnerId),
			aws.ToTime(cr.EndDate).Equal(end), string(cr.EndDateType)}
		want := []any{"m5.xlarge", "us-east-1b", "use1-az2", int32(1), int32(4), "targeted", "capacity-block", "active", "210987654321", true, "limited"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("fields (-want +got):\n%s", diff)
		}
	})

	t.Run("pages", func(t *testing.T) {
		pager := ec2.NewDescribeCapacityReservationsPaginator(e.client, &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(1)})
		var got []string
		pages := 0
		for pager.HasMorePages() {
			out, err := pager.NextPage(context.Background())
			must(t, err)
			pages++
			got = append(got, ids(out.CapacityReservations)...)
		}
		if pages != 3 || len(got) != 3 {
			t.Errorf("got %v in %d pages, want 3 reservations in 3 pages", got, pages)
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := e.client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0000000000000000f"}})
		if got := code(t, err); got != "InvalidCapacityReservationId.NotFound" {
			t.Errorf("unknown id: code %q", got)
		}
		_, err = e.client.DescribeCapacityReservations(context.Background(), &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{flt("bogus", "x")}})
		if got := code(t, err); got != "InvalidParameterValue" {
			t.Errorf("unknown filter: code %q", got)
		}
	})
}

// TestCreateFleetIntoReservation: launches through a template that targets
// a reservation use its slots, a full reservation fails with
// ReservationCapacityExceeded, and termination gives the slot back.
func TestCreateFleetIntoReservation(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	cr, err := e.svc.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 2})
	must(t, err)
	e.reservedTemplate(t, "reserved", cr.ID)
	available := func() int32 {
		t.Helper()
		out, err := e.client.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{cr.ID}})
		must(t, err)
		return aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount)
	}
	var launched []string
	for i := range 2 {
		out, err := e.fleet(t, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
		must(t, err)
		if len(out.Instances) != 1 {
			t.Fatalf("launch %d: instances %+v errors %+v", i, out.Instances, out.Errors)
		}
		launched = append(launched, out.Instances[0].InstanceIds[0])
	}
	if got := available(); got != 0 {
		t.Errorf("available after two launches = %d, want 0", got)
	}
	di, err := e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: launched[:1]})
	must(t, err)
	if got := aws.ToString(di.Reservations[0].Instances[0].CapacityReservationId); got != cr.ID {
		t.Errorf("instance capacityReservationId = %q, want %q", got, cr.ID)
	}

	out, err := e.fleet(t, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	if len(out.Instances) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("third launch: instances %+v errors %+v, want one ReservationCapacityExceeded", out.Instances, out.Errors)
	}
	out, err = e.fleet(t, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[1].ID})
	must(t, err)
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InvalidParameterCombination" {
		t.Errorf("launch in another zone: errors %+v, want InvalidParameterCombination", out.Errors)
	}

	_, err = e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: launched[:1]})
	must(t, err)
	if got := available(); got != 1 {
		t.Errorf("available after a termination = %d, want 1", got)
	}
	e.clk.Step(time.Minute)
	e.svc.Advance()
	if got := available(); got != 1 {
		t.Errorf("available once terminated = %d, want 1 (released once)", got)
	}
	out, err = e.fleet(t, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, [2]string{"m5.large", e.subnets[0].ID})
	must(t, err)
	if len(out.Instances) != 1 {
		t.Errorf("launch after release: instances %+v errors %+v", out.Instances, out.Errors)
	}
}

// TestOpenReservationAbsorbsOnDemandLaunches: as on EC2, an on-demand
// launch whose template does not opt out runs in an open reservation of its
// type and zone while it has a slot; a template with preference none, a
// spot launch, a targeted reservation and a full one take no slot.
func TestOpenReservationAbsorbsOnDemandLaunches(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	open, err := e.svc.AddCapacityReservation(CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 1})
	must(t, err)
	_, err = e.svc.AddCapacityReservation(CapacityReservation{InstanceType: "c5.large", Zone: "us-east-1a", AvailableInstanceCount: 1, InstanceMatchCriteria: "targeted"})
	must(t, err)
	plain := e.createTemplate(t, "plain", e.images[0].ID)
	optOut, err := e.client.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("opt-out"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String(e.images[0].ID),
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationPreference: ec2types.CapacityReservationPreferenceNone,
			},
		},
	})
	must(t, err)
	reservationOf := func(lt string, capacityType ec2types.DefaultTargetCapacityType, instanceType string) string {
		t.Helper()
		out, err := e.fleet(t, lt, capacityType, 1, [2]string{instanceType, e.subnets[0].ID})
		must(t, err)
		if len(out.Instances) != 1 {
			t.Fatalf("%s %s launch from %s: instances %+v errors %+v", capacityType, instanceType, lt, out.Instances, out.Errors)
		}
		di, err := e.client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: out.Instances[0].InstanceIds})
		must(t, err)
		return aws.ToString(di.Reservations[0].Instances[0].CapacityReservationId)
	}
	cases := []struct {
		name, template string
		capacityType   ec2types.DefaultTargetCapacityType
		instanceType   string
		want           string
	}{
		{"preference none", *optOut.LaunchTemplate.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", ""},
		{"spot", *plain.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeSpot, "m5.large", ""},
		{"targeted reservation of the type", *plain.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, "c5.large", ""},
		{"open reservation", *plain.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", open.ID},
		{"open reservation full", *plain.LaunchTemplateName, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large", ""},
	}
	for _, tc := range cases {
		if got := reservationOf(tc.template, tc.capacityType, tc.instanceType); got != tc.want {
			t.Errorf("%s: instance capacityReservationId = %q, want %q", tc.name, got, tc.want)
		}
	}
}
