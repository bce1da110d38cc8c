package capacityreservation

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

var epoch = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestFromEC2(t *testing.T) {
	end := epoch.Add(time.Hour)
	base := func() ec2types.CapacityReservation {
		return ec2types.CapacityReservation{
			CapacityReservationId: aws.String("cr-1"), InstanceType: aws.String("m5.large"), AvailabilityZone: aws.String("us-east-1a"),
			OwnerId: aws.String("123456789012"), InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted, AvailableInstanceCount: aws.Int32(3),
		}
	}
	want := func(mut func(*v1.CapacityReservation)) v1.CapacityReservation {
		out := v1.CapacityReservation{ID: "cr-1", InstanceType: "m5.large", AvailabilityZone: "us-east-1a", OwnerID: "123456789012",
			InstanceMatchCriteria: "targeted", ReservationType: v1.CapacityReservationTypeDefault, State: v1.CapacityReservationStateActive,
			AvailableInstanceCount: aws.Int32(3)}
		if mut != nil {
			mut(&out)
		}
		return out
	}
	endTime := metav1.NewTime(end)
	cases := map[string]struct {
		mut    func(*ec2types.CapacityReservation)
		now    time.Time
		want   v1.CapacityReservation
		wantOK bool
	}{
		"odcr": {wantOK: true, want: want(nil)},
		"capacity block, active": {
			mut: func(cr *ec2types.CapacityReservation) { cr.ReservationType = "capacity-block"; cr.EndDate = &end },
			now: end.Add(-ExpirationWindow - time.Second), wantOK: true,
			want: want(func(c *v1.CapacityReservation) { c.ReservationType = "capacity-block"; c.EndTime = &endTime }),
		},
		"capacity block, expiring": {
			mut: func(cr *ec2types.CapacityReservation) { cr.ReservationType = "capacity-block"; cr.EndDate = &end },
			now: end.Add(-ExpirationWindow), wantOK: true,
			want: want(func(c *v1.CapacityReservation) {
				c.ReservationType, c.EndTime, c.State = "capacity-block", &endTime, v1.CapacityReservationStateExpiring
			}),
		},
		"odcr with end date stays active": {
			mut: func(cr *ec2types.CapacityReservation) { cr.EndDate = &end }, now: end, wantOK: true,
			want: want(func(c *v1.CapacityReservation) { c.EndTime = &endTime }),
		},
		"unknown match criteria": {mut: func(cr *ec2types.CapacityReservation) { cr.InstanceMatchCriteria = "future" }},
		"unknown type":           {mut: func(cr *ec2types.CapacityReservation) { cr.ReservationType = "interruptible-thing" }},
		"no id":                  {mut: func(cr *ec2types.CapacityReservation) { cr.CapacityReservationId = nil }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := base()
			if tc.mut != nil {
				tc.mut(&in)
			}
			got, ok := FromEC2(tc.now, in)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); ok && diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilters(t *testing.T) {
	terms := []v1.CapacityReservationSelectorTerm{
		{Tags: map[string]string{"team": "ml", "env": "*"}, OwnerID: "123456789012"},
		{ID: "cr-1"}, {ID: "cr-2"},
		{InstanceMatchCriteria: "open"},
	}
	render := func(sets [][]ec2types.Filter) [][]string {
		var out [][]string
		for _, set := range sets {
			var s []string
			for _, f := range set {
				s = append(s, aws.ToString(f.Name)+"="+join(f.Values))
			}
			out = append(out, s)
		}
		return out
	}
	want := [][]string{
		{"capacity-reservation-id=cr-1,cr-2", "state=active"},
		{"tag-key=env", "tag:team=ml", "owner-id=123456789012", "state=active"},
		{"instance-match-criteria=open", "state=active"},
	}
	if diff := cmp.Diff(want, render(Filters(terms))); diff != "" {
		t.Errorf("filters (-want +got):\n%s", diff)
	}
}

func join(vs []string) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// TestListAgainstLocalEC2: the provider through the SDK against the local
// endpoint: id and tag terms ORed, inactive reservations left out, counts
// recorded and then counted by launches, refusals and terminations.
func TestListAgainstLocalEC2(t *testing.T) {
	clk := clocktesting.NewFakeClock(epoch)
	svc := localec2.New(localec2.Config{Clock: clk, Seed: 3})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
		HTTPClient:  &http.Client{Transport: awsclient.BufferRequestBodies(nil)}})
	for _, cr := range []localec2.CapacityReservation{
		{ID: "cr-0a", InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 2},
		{ID: "cr-0b", InstanceType: "c5.large", Zone: "us-east-1b", AvailableInstanceCount: 1, Tags: map[string]string{"team": "ml"}},
		{ID: "cr-0c", InstanceType: "c5.large", Zone: "us-east-1c", AvailableInstanceCount: 1, Tags: map[string]string{"team": "ml"}, State: "expired"},
		{ID: "cr-0d", InstanceType: "c5.large", Zone: "us-east-1c", AvailableInstanceCount: 4, Tags: map[string]string{"team": "web"}},
	} {
		if _, err := svc.AddCapacityReservation(cr); err != nil {
			t.Fatal(err)
		}
	}
	p := NewProvider(client, clk)
	got, err := p.List(context.Background(), []v1.CapacityReservationSelectorTerm{{ID: "cr-0a"}, {Tags: map[string]string{"team": "ml"}}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cr := range got {
		ids = append(ids, cr.ID)
	}
	if diff := cmp.Diff([]string{"cr-0a", "cr-0b"}, ids); diff != "" {
		t.Fatalf("listed (-want +got):\n%s", diff)
	}
	count := func(id string) int {
		n, ok := p.Available(id)
		if !ok {
			t.Fatalf("no count for %s", id)
		}
		return n
	}
	seq := p.SeqNum()
	p.MarkLaunched("cr-0a")
	if count("cr-0a") != 1 || p.SeqNum() == seq {
		t.Errorf("after a launch: count %d, seq %d -> %d", count("cr-0a"), seq, p.SeqNum())
	}
	p.MarkTerminated("cr-0a")
	p.MarkUnavailable("cr-0b")
	if count("cr-0a") != 2 || count("cr-0b") != 0 {
		t.Errorf("counts %d, %d; want 2, 0", count("cr-0a"), count("cr-0b"))
	}
	// The next describe is the truth again.
	if _, err := p.List(context.Background(), []v1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}}}); err != nil {
		t.Fatal(err)
	}
	if count("cr-0b") != 1 {
		t.Errorf("count after a describe = %d, want EC2's 1", count("cr-0b"))
	}
	if _, ok := p.Available("cr-0d"); ok {
		t.Error("cr-0d was never selected but has a count")
	}
}
