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

// TestRegistrationReconcileWaits covers the cases that need no API call: a
// Node that is not delayed or already handed over is left alone, and one
// whose time has not come is requeued for exactly the time left.
func TestRegistrationReconcileWaits(t *testing.T) {
	_, clk := newTestProvider(t, Options{})
	rc := NewRegistrationController(nil, clk)
	at := func(d time.Duration) string { return clk.Now().Add(d).Format(time.RFC3339Nano) }
	cases := map[string]struct {
		annotations map[string]string
		deleting    bool
		want        reconcile.Result
	}{
		"no registration time":     {annotations: map[string]string{KwokNodeAnnotationKey: KwokNodeAnnotationValue}},
		"already handed to kwok":   {annotations: map[string]string{RegisterAfterAnnotationKey: at(-time.Minute), KwokNodeAnnotationKey: KwokNodeAnnotationValue}},
		"being deleted":            {annotations: map[string]string{RegisterAfterAnnotationKey: at(-time.Minute)}, deleting: true},
		"due in 90s":               {annotations: map[string]string{RegisterAfterAnnotationKey: at(90 * time.Second)}, want: reconcile.Result{RequeueAfter: 90 * time.Second}},
		"due in 1ns (nanoseconds)": {annotations: map[string]string{RegisterAfterAnnotationKey: at(1)}, want: reconcile.Result{RequeueAfter: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tc.annotations}}
			if tc.deleting {
				node.DeletionTimestamp = &metav1.Time{Time: clk.Now()}
			}
			got, err := rc.Reconcile(context.Background(), node)
			if err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
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
