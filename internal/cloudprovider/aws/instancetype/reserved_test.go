package instancetype

import (
	"context"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// fakeReservations is a settable reservation tracker.
type fakeReservations struct {
	mu     sync.Mutex
	counts map[string]int
	seq    uint64
}

func (f *fakeReservations) Available(id string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.counts[id]
	return n, ok
}

func (f *fakeReservations) SeqNum() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seq
}

func (f *fakeReservations) set(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counts[id] = n
	f.seq++
}

// TestReservedOfferings: each active reservation of the class adds a
// reserved offering to its type in its zone, priced near zero, available
// while it has room, widening the type's capacity-type requirement; the
// tracker's count wins over the status's, and a change of it is seen at
// once despite the cache.
func TestReservedOfferings(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a", "us-east-1b", "us-east-1c")
	tracker := &fakeReservations{counts: map[string]int{}}
	tp.UseReservations(tracker)
	nc := nodeClass("default", catalog.AMIFamilyAL2023, "us-east-1a", "us-east-1b")
	nc.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-1", InstanceType: "m5.large", AvailabilityZone: "us-east-1b", State: awsv1.CapacityReservationStateActive, AvailableInstanceCount: ptr[int32](2)},
		{ID: "cr-2", InstanceType: "m5.large", AvailabilityZone: "us-east-1c", State: awsv1.CapacityReservationStateActive, AvailableInstanceCount: ptr[int32](2)}, // no subnet there
		{ID: "cr-3", InstanceType: "c5.large", AvailabilityZone: "us-east-1a", State: awsv1.CapacityReservationStateExpiring, AvailableInstanceCount: ptr[int32](2)},
		{ID: "cr-4", InstanceType: "c5.large", AvailabilityZone: "us-east-1a", State: awsv1.CapacityReservationStateActive, AvailableInstanceCount: ptr[int32](0)},
	}
	its, err := tp.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	m5 := find(t, its, "m5.large")
	want := []string{"us-east-1a/on-demand", "us-east-1a/spot", "us-east-1b/on-demand", "us-east-1b/spot", "us-east-1b/reserved"}
	if diff := cmp.Diff(want, offeringStrings(m5.Offerings)); diff != "" {
		t.Errorf("m5.large offerings (-want +got):\n%s", diff)
	}
	reserved := m5.Offerings[4]
	if reserved.ReservationID != "cr-1" || reserved.ReservationCapacity != 2 || reserved.Price != 0.096*ReservedPriceFactor {
		t.Errorf("reserved offering = %+v", reserved)
	}
	if r, _ := m5.Requirements.Get("karpenter.sh/capacity-type"); r.String() != "karpenter.sh/capacity-type In [on-demand reserved spot]" {
		t.Errorf("capacity-type requirement = %s", r.String())
	}
	c5 := find(t, its, "c5.large")
	if diff := cmp.Diff([]string{"us-east-1a/on-demand", "us-east-1a/spot", "us-east-1b/on-demand", "us-east-1b/spot", "us-east-1a/reserved/unavailable"},
		offeringStrings(c5.Offerings)); diff != "" {
		t.Errorf("c5.large offerings (-want +got):\n%s (the expiring block has none, the full one is unavailable)", diff)
	}

	// The tracker counted a launch: the offering goes at once.
	tracker.set("cr-1", 0)
	its, err = tp.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if o := find(t, its, "m5.large").Offerings[4]; o.Available || o.ReservationCapacity != 0 {
		t.Errorf("reserved offering after the tracker emptied it = %+v, want unavailable", o)
	}
	if r, _ := find(t, its, "m5.large").Requirements.Get("karpenter.sh/capacity-type"); r.String() != "karpenter.sh/capacity-type In [on-demand spot]" {
		t.Errorf("capacity-type requirement of a full reservation's type = %s", r.String())
	}
}

// TestReservationCountsLeaveOtherClassesCached: a reservation count change
// recomputes the lists of classes with reservations only; a class without
// any keeps its cached list (GetInstanceTypes runs every provisioning pass,
// and every reserved launch or termination changes a count).
func TestReservationCountsLeaveOtherClassesCached(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a")
	tracker := &fakeReservations{counts: map[string]int{}}
	tp.UseReservations(tracker)
	plain := nodeClass("plain", catalog.AMIFamilyAL2023, "us-east-1a")
	reserved := nodeClass("reserved", catalog.AMIFamilyAL2023, "us-east-1a")
	reserved.Status.CapacityReservations = []awsv1.CapacityReservation{
		{ID: "cr-1", InstanceType: "m5.large", AvailabilityZone: "us-east-1a", State: awsv1.CapacityReservationStateActive, AvailableInstanceCount: ptr[int32](2)},
	}
	list := func(nc *awsv1.EC2NodeClass) []*cloudprovider.InstanceType {
		t.Helper()
		its, err := tp.List(context.Background(), nc)
		if err != nil {
			t.Fatal(err)
		}
		return its
	}
	plainBefore, reservedBefore := list(plain), list(reserved)
	tracker.set("cr-1", 1)
	if plainAfter := list(plain); plainAfter[0] != plainBefore[0] {
		t.Error("a reservation count change recomputed the list of a class without reservations")
	}
	if reservedAfter := list(reserved); reservedAfter[0] == reservedBefore[0] {
		t.Error("a reservation count change left the list of the class with the reservation cached")
	}
}
