package kwok_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	clocktesting "k8s.io/utils/clock/testing"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
)

// TestCreateNeedsReadyNodeClass checks that Create launches nothing and
// returns a NodeClassNotReadyError unless the claim's KWOKNodeClass exists
// and is Ready.
func TestCreateNeedsReadyNodeClass(t *testing.T) {
	ctx := context.Background()
	c, _ := newProvider(t, kwok.Options{})
	ready := createNodeClass(t, nil)

	// A class the NodeClass controller has not seen yet.
	unjudged := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "unjudged-" + rand.String(6)}}
	if err := testEnv.Client.Create(ctx, unjudged); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, unjudged) })
	// A class whose Ready condition is False.
	notReady := createNodeClass(t, nil)
	meta.SetStatusCondition(&notReady.Status.Conditions, metav1.Condition{
		Type: kwokv1alpha1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "Testing", Message: "set by the test",
	})
	if err := testEnv.Client.Status().Update(ctx, notReady); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		ref       *v1.NodeClassReference
		wantError bool
	}{
		"ready":                        {ref: kwokRef(ready.Name)},
		"ready, group with a version":  {ref: &v1.NodeClassReference{Group: "karpenter.kwok.sh/v1alpha1", Kind: "KWOKNodeClass", Name: ready.Name}},
		"missing":                      {ref: kwokRef("no-such-class"), wantError: true},
		"no Ready condition yet":       {ref: kwokRef(unjudged.Name), wantError: true},
		"Ready=False":                  {ref: kwokRef(notReady.Name), wantError: true},
		"another provider's NodeClass": {ref: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: ready.Name}, wantError: true},
		"no reference":                 {wantError: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := newClaim("", in(corev1.LabelInstanceTypeStable, "m5.large"))
			claim.Spec.NodeClassRef = tc.ref
			_, err := c.Create(ctx, claim)
			if !tc.wantError {
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				getNode(t, claim.Name)
				return
			}
			if !cloudprovider.IsNodeClassNotReadyError(err) {
				t.Fatalf("Create = %v, want NodeClassNotReadyError", err)
			}
			expectNoNode(t, claim.Name)
		})
	}
}

// TestNodeClassController checks the Ready condition the controller keeps:
// its status, reason, observed generation and transition time.
func TestNodeClassController(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch())
	nc := kwok.NewNodeClassController(testEnv.Client, clk)
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "judged-" + rand.String(6)}}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, nodeClass) })
	readyCondition := func(status metav1.ConditionStatus, reason string, generation int64, at time.Time) metav1.Condition {
		return metav1.Condition{
			Type: kwokv1alpha1.ConditionTypeReady, Status: status, Reason: reason,
			ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(at),
		}
	}
	expectReady := func(t *testing.T, want metav1.Condition) {
		t.Helper()
		got := meta.FindStatusCondition(getNodeClass(t, nodeClass.Name).Status.Conditions, kwokv1alpha1.ConditionTypeReady)
		if got == nil {
			t.Fatal("no Ready condition")
		}
		got.Message = ""
		if diff := cmp.Diff(want, *got); diff != "" {
			t.Errorf("Ready condition (-want +got):\n%s", diff)
		}
	}

	// 1. A valid class becomes Ready.
	reconcileNodeClass(t, nc, nodeClass.Name)
	expectReady(t, readyCondition(metav1.ConditionTrue, kwok.ReasonReady, 1, epoch()))

	// 2. A spec change moves the observed generation, not the transition time.
	clk.Step(time.Minute)
	changed := getNodeClass(t, nodeClass.Name)
	changed.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: time.Minute}
	if err := testEnv.Client.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	reconcileNodeClass(t, nc, nodeClass.Name)
	expectReady(t, readyCondition(metav1.ConditionTrue, kwok.ReasonReady, 2, epoch()))

	// 3. An invalid spec (which the CRD's pattern keeps out of the API, so
	// it is only in memory here) makes the class not Ready.
	clk.Step(time.Minute)
	invalid := getNodeClass(t, nodeClass.Name)
	invalid.Spec.NodeRegistrationDelay = &metav1.Duration{Duration: -time.Second}
	if _, err := nc.Reconcile(ctx, invalid); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	expectReady(t, readyCondition(metav1.ConditionFalse, kwok.ReasonInvalidNodeRegistrationDelay, 2, epoch().Add(2*time.Minute)))

	// 4. Valid again.
	clk.Step(time.Minute)
	reconcileNodeClass(t, nc, nodeClass.Name)
	expectReady(t, readyCondition(metav1.ConditionTrue, kwok.ReasonReady, 2, epoch().Add(3*time.Minute)))
}
