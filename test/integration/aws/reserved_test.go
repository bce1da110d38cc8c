package aws_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/capacityreservation"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// reservedOffering returns the type's reserved offering of a reservation.
func reservedOffering(t *testing.T, its []*cloudprovider.InstanceType, typ, id string) cloudprovider.Offering {
	t.Helper()
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == typ })
	if i < 0 {
		t.Fatalf("no %s among the instance types", typ)
	}
	for _, o := range its[i].Offerings {
		if o.ReservationID == id {
			return o
		}
	}
	t.Fatalf("%s has no offering in reservation %s: %+v", typ, id, its[i].Offerings)
	return cloudprovider.Offering{}
}

// TestReservedCapacity drives a capacity reservation end to end through the
// provider and the local endpoint: the class resolves it into its status
// (CapacityReservationsReady), instance types get a reserved offering
// priced near zero, a claim allowing reserved launches into it with the
// reservation labels, the count is respected (the claim after the last slot
// goes to on-demand, and a launch EC2 refuses marks the reservation
// unavailable and fails with insufficient capacity), and a termination
// gives the slot back.
func TestReservedCapacity(t *testing.T) {
	h := newHarness(t, "reserved")
	ctx := context.Background()
	cr, err := h.server.AddCapacityReservation(localec2.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1b", AvailableInstanceCount: 1, InstanceMatchCriteria: "targeted",
		Tags: map[string]string{"team": "ml"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Another account's reservation with the same tag is not selected.
	if _, err := h.server.AddCapacityReservation(localec2.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 5, OwnerID: "210987654321", Tags: map[string]string{"team": "ml"},
	}); err != nil {
		t.Fatal(err)
	}
	class := h.defaultClass("reserved")
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "ml"}, OwnerID: h.server.AccountID()}}
	h.createClass(t, class)
	nc := h.reconcile(t, "reserved")

	// 1. Status and condition.
	if c := condition(t, nc, awsv1.ConditionTypeCapacityReservationsReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("CapacityReservationsReady = %s (%s)", c.Status, c.Message)
	}
	if c := condition(t, nc, awsv1.ConditionTypeReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %s (%s)", c.Status, c.Message)
	}
	if len(nc.Status.CapacityReservations) != 1 {
		t.Fatalf("status.capacityReservations = %+v, want only %s", nc.Status.CapacityReservations, cr.ID)
	}
	got := nc.Status.CapacityReservations[0]
	if got.ID != cr.ID || got.InstanceType != "m5.large" || got.AvailabilityZone != "us-east-1b" || got.OwnerID != h.server.AccountID() ||
		got.InstanceMatchCriteria != "targeted" || got.ReservationType != awsv1.CapacityReservationTypeDefault ||
		got.State != awsv1.CapacityReservationStateActive || got.AvailableInstanceCount == nil || *got.AvailableInstanceCount != 1 {
		t.Fatalf("status.capacityReservations[0] = %+v", got)
	}

	// 2. The reserved offering: near zero, available.
	cp := h.rt.CloudProvider
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "reserved"}
	its, err := cp.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	o := reservedOffering(t, its, "m5.large", cr.ID)
	if o.CapacityType != karpv1.CapacityTypeReserved || !o.Available || o.ReservationCapacity != 1 || o.Zone != "us-east-1b" || o.Price <= 0 || o.Price > 1e-6 {
		t.Fatalf("reserved offering = %+v, want available, capacity 1, priced near zero", o)
	}

	// 3. A claim that allows reserved launches into the reservation.
	all := []string{"reserved", "spot", "on-demand"}
	first, err := cp.Create(ctx, claimFor("reserved-1", "reserved", []string{"m5.large"}, all))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	for key, want := range map[string]string{
		karpv1.CapacityTypeLabelKey: "reserved", awsv1.LabelCapacityReservationID: cr.ID,
		awsv1.LabelCapacityReservationType: "default", corev1.LabelTopologyZone: "us-east-1b",
	} {
		if first.Labels[key] != want {
			t.Errorf("label %s = %q, want %q", key, first.Labels[key], want)
		}
	}
	insts := h.server.EC2().Instances()
	if len(insts) != 1 || insts[0].CapacityReservationID != cr.ID {
		t.Fatalf("instances %+v, want one in %s", insts, cr.ID)
	}
	if n := h.server.EC2().CapacityReservations()[0].AvailableInstanceCount; n != 0 {
		t.Fatalf("reservation count after the launch = %d, want 0", n)
	}

	// 4. The count is respected: the provider counted the launch, so the
	//    offering is unavailable and the next claim goes to spot.
	its, err = cp.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	if o := reservedOffering(t, its, "m5.large", cr.ID); o.Available || o.ReservationCapacity != 0 {
		t.Fatalf("reserved offering after the launch = %+v, want unavailable", o)
	}
	second, err := cp.Create(ctx, claimFor("reserved-2", "reserved", []string{"m5.large"}, all))
	if err != nil {
		t.Fatalf("second Create: %v", err)
	}
	if ct := second.Labels[karpv1.CapacityTypeLabelKey]; ct != "spot" || second.Labels[awsv1.LabelCapacityReservationID] != "" {
		t.Fatalf("second claim labels %v, want spot without a reservation", second.Labels)
	}

	// 5. A claim that insists on reserved while the reservation is full:
	//    insufficient capacity, no instance.
	_, err = cp.Create(ctx, claimFor("reserved-3", "reserved", []string{"m5.large"}, []string{"reserved"}))
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("reserved-only Create with a full reservation = %v, want an insufficient-capacity error saying the offerings were unavailable", err)
	}

	// 6. Termination gives the slot back, and the refreshed status shows it.
	if err := cp.Delete(ctx, first); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v", err)
	}
	if n := h.server.EC2().CapacityReservations()[0].AvailableInstanceCount; n != 1 {
		t.Fatalf("reservation count after the termination = %d, want 1", n)
	}
	h.clock.Step(2 * time.Minute)
	nc = h.reconcile(t, "reserved")
	if n := nc.Status.CapacityReservations[0].AvailableInstanceCount; n == nil || *n != 1 {
		t.Fatalf("status count after the termination = %v, want 1", n)
	}
	third, err := cp.Create(ctx, claimFor("reserved-4", "reserved", []string{"m5.large"}, all))
	if err != nil || third.Labels[awsv1.LabelCapacityReservationID] != cr.ID {
		t.Fatalf("Create after the release = %v, %v; want a launch into %s", third, err, cr.ID)
	}
}

// TestReservedLaunchRefused: when EC2 refuses a launch into a reservation
// the provider still believed had room (another client took the slot), the
// claim fails with insufficient capacity and the reserved offering becomes
// unavailable, so the next claim goes elsewhere.
func TestReservedLaunchRefused(t *testing.T) {
	h := newHarness(t, "refused")
	ctx := context.Background()
	cr, err := h.server.AddCapacityReservation(localec2.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", AvailableInstanceCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	class := h.defaultClass("refused")
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: cr.ID}}
	h.createClass(t, class)
	h.reconcile(t, "refused")
	// Someone else fills the reservation behind the provider's back.
	if err := h.server.EC2().SetCapacityReservationAvailable(cr.ID, 0); err != nil {
		t.Fatal(err)
	}

	cp := h.rt.CloudProvider
	all := []string{"reserved", "on-demand"}
	_, err = cp.Create(ctx, claimFor("refused-1", "refused", []string{"m5.large"}, all))
	if !cloudprovider.IsInsufficientCapacityError(err) || !strings.Contains(err.Error(), "ReservationCapacityExceeded") {
		t.Fatalf("Create into a reservation EC2 says is full = %v, want insufficient capacity naming ReservationCapacityExceeded", err)
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "refused"}
	its, err := cp.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	if o := reservedOffering(t, its, "m5.large", cr.ID); o.Available {
		t.Fatalf("reserved offering after the refusal = %+v, want unavailable", o)
	}
	next, err := cp.Create(ctx, claimFor("refused-2", "refused", []string{"m5.large"}, all))
	if err != nil || next.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" {
		t.Fatalf("next Create = %v, %v; want on-demand", next, err)
	}
}

// expiration returns the runtime's capacity-block expiration controller.
func (h *harness) expiration(t *testing.T) *capacityreservation.ExpirationController {
	t.Helper()
	for _, c := range h.rt.Controllers {
		if e, ok := c.(*capacityreservation.ExpirationController); ok {
			return e
		}
	}
	t.Fatal("the runtime has no capacity-block expiration controller")
	return nil
}

// TestCapacityBlockLaunchAndExpiry: a Capacity Block is launched into with
// the capacity-block market and labelled so; its NodeClaim is left alone
// until 40 minutes before the block's end, then deleted so its node drains
// before EC2 reclaims it.
func TestCapacityBlockLaunchAndExpiry(t *testing.T) {
	h := newHarness(t, "block")
	ctx := context.Background()
	end := h.clock.Now().Add(2 * time.Hour)
	cr, err := h.server.AddCapacityReservation(localec2.CapacityReservation{
		InstanceType: "m5.large", Zone: "us-east-1c", AvailableInstanceCount: 2, InstanceMatchCriteria: "targeted",
		ReservationType: localec2.ReservationTypeCapacityBlock, EndDate: end,
	})
	if err != nil {
		t.Fatal(err)
	}
	class := h.defaultClass("block")
	class.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: cr.ID}}
	h.createClass(t, class)
	nc := h.reconcile(t, "block")
	if len(nc.Status.CapacityReservations) != 1 || nc.Status.CapacityReservations[0].ReservationType != awsv1.CapacityReservationTypeCapacityBlock ||
		nc.Status.CapacityReservations[0].State != awsv1.CapacityReservationStateActive {
		t.Fatalf("status.capacityReservations = %+v", nc.Status.CapacityReservations)
	}

	claim := claimFor("block-1", "block", []string{"m5.large"}, []string{"reserved", "on-demand"})
	launched, err := h.rt.CloudProvider.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if launched.Labels[awsv1.LabelCapacityReservationType] != "capacity-block" || launched.Labels[awsv1.LabelCapacityReservationID] != cr.ID {
		t.Fatalf("labels %v, want the capacity block", launched.Labels)
	}
	lt := h.server.EC2().LaunchTemplates()
	var market string
	for _, tmpl := range lt {
		if v := tmpl.Data.Params["InstanceMarketOptions.MarketType"]; v != "" {
			market = v
		}
	}
	if market != "capacity-block" {
		t.Errorf("no launch template with InstanceMarketOptions.MarketType=capacity-block")
	}
	// The claim as the core stores it.
	if err := testEnv.Client.Create(ctx, launched); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), launched) })

	exp := h.expiration(t)
	res, err := exp.Reconcile(ctx, launched)
	if err != nil || res.RequeueAfter != 80*time.Minute {
		t.Fatalf("Reconcile two hours before the end = %+v, %v; want a requeue in 80m", res, err)
	}
	h.clock.Step(80 * time.Minute)
	if _, err := exp.Reconcile(ctx, launched); err != nil {
		t.Fatal(err)
	}
	got := &karpv1.NodeClaim{}
	err = testEnv.Client.Get(ctx, client.ObjectKeyFromObject(launched), got)
	if err == nil && got.DeletionTimestamp.IsZero() {
		t.Fatalf("claim of an expiring capacity block is not being deleted")
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("getting the claim: %v", err)
	}
	// The class now reports the block as expiring, and offers it no more.
	nc = h.reconcile(t, "block")
	if nc.Status.CapacityReservations[0].State != awsv1.CapacityReservationStateExpiring {
		t.Errorf("state = %s, want expiring", nc.Status.CapacityReservations[0].State)
	}
	next, err := h.rt.CloudProvider.Create(ctx, claimFor("block-2", "block", []string{"m5.large"}, []string{"reserved", "on-demand"}))
	if err != nil || next.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" {
		t.Fatalf("Create while the block expires = %v, %v; want on-demand", next, err)
	}
}

// TestOnDemandLaunchStaysOutOfOpenReservations: an open On-Demand Capacity
// Reservation the class does not select must not absorb the provider's
// on-demand launch (EC2 would, by default): the provider's launch templates
// say preference none, as Karpenter's do, so the node is the on-demand node
// it planned and the reservation keeps its slots for whoever owns them.
func TestOnDemandLaunchStaysOutOfOpenReservations(t *testing.T) {
	h := newHarness(t, "openres")
	ctx := context.Background()
	for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		if _, err := h.server.AddCapacityReservation(localec2.CapacityReservation{InstanceType: "m5.large", Zone: zone, AvailableInstanceCount: 2}); err != nil {
			t.Fatal(err)
		}
	}
	h.createClass(t, h.defaultClass("openres"))
	h.reconcile(t, "openres")
	launched, err := h.rt.CloudProvider.Create(ctx, claimFor("openres-1", "openres", []string{"m5.large"}, []string{"on-demand"}))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := launched.Labels[karpv1.CapacityTypeLabelKey]; got != karpv1.CapacityTypeOnDemand {
		t.Errorf("launched capacity type %q, want on-demand", got)
	}
	for _, inst := range h.server.EC2().Instances() {
		if inst.CapacityReservationID != "" {
			t.Errorf("instance %s runs in open reservation %s", inst.ID, inst.CapacityReservationID)
		}
	}
	for _, cr := range h.server.EC2().CapacityReservations() {
		if cr.AvailableInstanceCount != 2 {
			t.Errorf("reservation %s in %s has %d slots left, want 2", cr.ID, cr.Zone, cr.AvailableInstanceCount)
		}
	}
}
