package kwok

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// TestSleepWaitsForTheClock checks that the launch delay is measured on the
// injected clock and ends early when the context does.
func TestSleepWaitsForTheClock(t *testing.T) {
	c, clk := newTestProvider(t, Options{})
	done := make(chan error, 1)
	go func() { done <- c.sleep(context.Background(), 30*time.Second) }()
	waitForWaiters(t, clk.HasWaiters)
	clk.Step(30*time.Second - 1)
	select {
	case err := <-done:
		t.Fatalf("sleep returned %v before the delay passed", err)
	default:
	}
	clk.Step(1)
	if err := <-done; err != nil {
		t.Fatalf("sleep: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- c.sleep(ctx, time.Hour) }()
	waitForWaiters(t, clk.HasWaiters)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep after cancel = %v, want context.Canceled", err)
	}
}

// waitForWaiters polls until the fake clock has a timer, failing after 10s.
func waitForWaiters(t *testing.T, hasWaiters func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return hasWaiters(), nil })
	if err != nil {
		t.Fatalf("waiting for a timer on the fake clock: %v", err)
	}
}

// TestRegistrationReconcileWaits covers the cases that need no API call:
// claims that are not booting instances of the provider are left alone, and
// one whose time has not come is requeued for exactly the time left.
func TestRegistrationReconcileWaits(t *testing.T) {
	c, clk := newTestProvider(t, Options{Partition: "p1"})
	rc := NewRegistrationController(nil, clk, c)
	at := func(d time.Duration) string { return formatRegisterAfter(clk.Now().Add(d)) }
	cases := map[string]struct {
		mutate func(*v1.NodeClaim)
		want   reconcile.Result
	}{
		"due in 90s":        {want: reconcile.Result{RequeueAfter: 90 * time.Second}},
		"due in 1ns":        {mutate: func(nc *v1.NodeClaim) { nc.Labels[RegisterAfterLabelKey] = at(1) }, want: reconcile.Result{RequeueAfter: 1}},
		"no delay label":    {mutate: func(nc *v1.NodeClaim) { delete(nc.Labels, RegisterAfterLabelKey) }},
		"other partition":   {mutate: func(nc *v1.NodeClaim) { nc.Labels[PartitionLabelKey] = "p2" }},
		"other provider ID": {mutate: func(nc *v1.NodeClaim) { nc.Status.ProviderID = "aws:///us-east-1a/i-0123" }},
		"being deleted":     {mutate: func(nc *v1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: clk.Now()} }},
		"node registered":   {mutate: func(nc *v1.NodeClaim) { nc.Status.NodeName = nc.Name }},
		"Registered=True": {mutate: func(nc *v1.NodeClaim) {
			nc.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeRegistered, Status: metav1.ConditionTrue}}
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := testClaim()
			claim.Labels[PartitionLabelKey] = "p1"
			claim.Labels[RegisterAfterLabelKey] = at(90 * time.Second)
			claim.Status.ProviderID = ProviderIDPrefix + claim.Name
			if tc.mutate != nil {
				tc.mutate(claim)
			}
			got, err := rc.Reconcile(context.Background(), claim)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeFromClaim(t *testing.T) {
	c, _ := newTestProvider(t, Options{Partition: "p1"})
	claim := testClaim()
	claim.Labels[corev1.LabelInstanceTypeStable] = "m5.large"
	claim.Labels[corev1.LabelTopologyZone] = "us-east-1c"
	claim.Labels[v1.CapacityTypeLabelKey] = v1.CapacityTypeSpot
	node, err := c.nodeFromClaim(claim)
	if err != nil {
		t.Fatalf("nodeFromClaim: %v", err)
	}
	want := newNode(claim, parse(t, claim.Spec.Requirements), m5Spot(t, c), "p1")
	if diff := cmp.Diff(want.Labels, node.Labels); diff != "" {
		t.Errorf("labels (-launch +registration):\n%s", diff)
	}
	if node.Status.Allocatable.Memory().String() != "6903Mi" {
		t.Errorf("allocatable memory = %s", node.Status.Allocatable.Memory())
	}
	for name, mutate := range map[string]func(*v1.NodeClaim){
		"unknown type":  func(nc *v1.NodeClaim) { nc.Labels[corev1.LabelInstanceTypeStable] = "m5.huge" },
		"unknown zone":  func(nc *v1.NodeClaim) { nc.Labels[corev1.LabelTopologyZone] = "eu-west-1a" },
		"no zone label": func(nc *v1.NodeClaim) { delete(nc.Labels, corev1.LabelTopologyZone) },
	} {
		broken := claim.DeepCopy()
		mutate(broken)
		if _, err := c.nodeFromClaim(broken); err == nil {
			t.Errorf("%s: nodeFromClaim succeeded", name)
		}
	}
}

func TestValidateNodeClass(t *testing.T) {
	cases := map[string]struct {
		spec       kwokv1alpha1.KWOKNodeClassSpec
		wantReason string
	}{
		"empty":          {},
		"zero delay":     {spec: kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: &metav1.Duration{}}},
		"positive delay": {spec: kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: &metav1.Duration{Duration: time.Minute}}},
		"negative delay": {
			spec:       kwokv1alpha1.KWOKNodeClassSpec{NodeRegistrationDelay: &metav1.Duration{Duration: -time.Second}},
			wantReason: ReasonInvalidNodeRegistrationDelay,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reason, message := validateNodeClass(&tc.spec)
			if reason != tc.wantReason || (reason != "" && message == "") {
				t.Errorf("validateNodeClass = %q, %q; want reason %q with a message", reason, message, tc.wantReason)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		opts    Options
		wantErr bool
	}{
		"zero value":                  {},
		"partition":                   {opts: Options{Partition: "team-a"}},
		"partition not a label value": {opts: Options{Partition: "team a/b"}, wantErr: true},
		"negative launch delay":       {opts: Options{LaunchDelay: -1}, wantErr: true},
		"negative registration delay": {opts: Options{RegistrationDelay: -1}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.opts.validate(); (err != nil) != tc.wantErr {
				t.Errorf("validate = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

func TestFailOfferings(t *testing.T) {
	a := OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot"}
	b := OfferingID{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}
	ids := []OfferingID{a}
	fail := FailOfferings(ids...)
	ids[0] = b
	if !fail(a) || fail(b) {
		t.Errorf("FailOfferings(%s) fails %s: %v, %s: %v", a, a, fail(a), b, fail(b))
	}
}

func TestProviderIdentity(t *testing.T) {
	c, _ := newTestProvider(t, Options{})
	if c.Name() != "kwok" || c.Partition() != DefaultPartition {
		t.Errorf("Name = %q, Partition = %q", c.Name(), c.Partition())
	}
	want := []string{"karpenter.kwok.sh/v1alpha1, Kind=KWOKNodeClass"}
	var got []string
	for _, gvk := range c.GetSupportedNodeClasses() {
		got = append(got, gvk.String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetSupportedNodeClasses (-want +got):\n%s", diff)
	}
	wantPolicies := []cloudprovider.RepairPolicy{
		{ConditionType: "Ready", ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute},
		{ConditionType: "Ready", ConditionStatus: metav1.ConditionUnknown, TolerationDuration: 10 * time.Minute},
	}
	if diff := cmp.Diff(wantPolicies, c.RepairPolicies()); diff != "" {
		t.Errorf("RepairPolicies (-want +got):\n%s", diff)
	}
	if reason, err := c.IsDrifted(context.Background(), &v1.NodeClaim{}); reason != "" || err != nil {
		t.Errorf("IsDrifted = %q, %v", reason, err)
	}
}

// TestConcurrentUse exercises the mutex-protected state from many goroutines;
// run it with -race.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	c, clk := newTestProvider(t, Options{})
	reqs := parse(t, []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large", "r5.large")})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				switch (i + j) % 4 {
				case 0:
					_, _ = c.launch(ctx, reqs, nil)
				case 1:
					_, _ = c.GetInstanceTypes(ctx, nil)
				case 2:
					c.SetInsufficientCapacity(FailOfferings(OfferingID{InstanceType: "c5.large", Zone: "us-east-1c", CapacityType: "spot"}))
					c.SetLaunchDelay(time.Duration(j))
				case 3:
					clk.Step(time.Minute)
					c.SetRegistrationDelay(time.Duration(j))
				}
			}
		})
	}
	wg.Wait()
}
