package kwok_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
)

// reconcileNode runs a registration controller once on the stored Node.
func reconcileNode(t *testing.T, rc *kwok.RegistrationController, name string) reconcile.Result {
	t.Helper()
	res, err := rc.Reconcile(context.Background(), getNode(t, name))
	if err != nil {
		t.Fatalf("reconciling node %s: %v", name, err)
	}
	return res
}

// TestRegistrationDelayIsRestartSafe launches a Node with a 2-minute
// registration delay; a controller that "restarts" half way finishes the job.
func TestRegistrationDelayIsRestartSafe(t *testing.T) {
	ctx := context.Background()
	c, clk := newProvider(t, kwok.Options{})
	claim := newClaim(createNodeClass(t, &metav1.Duration{Duration: 2 * time.Minute}).Name)
	created, err := c.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}

	// 1. Launched but not handed to kwok, and reported NotReady.
	node := getNode(t, claim.Name)
	if _, ok := node.Annotations[kwok.KwokNodeAnnotationKey]; ok {
		t.Fatal("node handed to kwok before its registration delay")
	}
	if got, want := node.Annotations[kwok.RegisterAfterAnnotationKey], "2030-01-02T03:06:05Z"; got != want {
		t.Errorf("registration time = %q, want %q", got, want)
	}
	if len(node.Status.Conditions) != 1 || node.Status.Conditions[0].Type != corev1.NodeReady || node.Status.Conditions[0].Status != corev1.ConditionFalse {
		t.Errorf("conditions of the booting node = %+v, want Ready=False", node.Status.Conditions)
	}
	rc := kwok.NewRegistrationController(testEnv.Client, clk)
	if diff := cmp.Diff(reconcile.Result{RequeueAfter: 2 * time.Minute}, reconcileNode(t, rc, claim.Name)); diff != "" {
		t.Errorf("first reconcile (-want +got):\n%s", diff)
	}

	// 2. The process restarts after 90s: new provider, new controller.
	clk.Step(90 * time.Second)
	restarted, err := kwok.New(testEnv.Client, clk, kwok.Options{Partition: c.Partition()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := restarted.Get(ctx, created.Status.ProviderID); err != nil {
		t.Errorf("restarted provider Get: %v", err)
	}
	rc = kwok.NewRegistrationController(testEnv.Client, clk)
	if diff := cmp.Diff(reconcile.Result{RequeueAfter: 30 * time.Second}, reconcileNode(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile after restart (-want +got):\n%s", diff)
	}

	// 3. At the registration time the Node is handed to kwok, once.
	clk.Step(30 * time.Second)
	if diff := cmp.Diff(reconcile.Result{}, reconcileNode(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile at the registration time (-want +got):\n%s", diff)
	}
	node = getNode(t, claim.Name)
	if got := node.Annotations[kwok.KwokNodeAnnotationKey]; got != kwok.KwokNodeAnnotationValue {
		t.Errorf("kwok annotation = %q after the delay, want %q", got, kwok.KwokNodeAnnotationValue)
	}
	if diff := cmp.Diff(reconcile.Result{}, reconcileNode(t, rc, claim.Name)); diff != "" {
		t.Errorf("reconcile of a registered node (-want +got):\n%s", diff)
	}
	if again := getNode(t, claim.Name); again.ResourceVersion != node.ResourceVersion {
		t.Error("reconciling a registered node changed it")
	}
}

// TestRegistrationDelaySource checks which delay applies: the NodeClass's
// when it sets one (even 0s), else the provider's option.
func TestRegistrationDelaySource(t *testing.T) {
	cases := map[string]struct {
		option    time.Duration
		nodeClass *metav1.Duration
		want      string // the registration time, or "" for immediate
	}{
		"none":                      {},
		"provider option":           {option: 45 * time.Second, want: "2030-01-02T03:04:50Z"},
		"node class overrides":      {option: 45 * time.Second, nodeClass: &metav1.Duration{Duration: 10 * time.Second}, want: "2030-01-02T03:04:15Z"},
		"node class 0s means none":  {option: 45 * time.Second, nodeClass: &metav1.Duration{}},
		"fractional seconds stored": {nodeClass: &metav1.Duration{Duration: 1500 * time.Millisecond}, want: "2030-01-02T03:04:06.5Z"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, _ := newProvider(t, kwok.Options{RegistrationDelay: tc.option})
			claim := newClaim(createNodeClass(t, tc.nodeClass).Name)
			if _, err := c.Create(context.Background(), claim); err != nil {
				t.Fatalf("Create: %v", err)
			}
			node := getNode(t, claim.Name)
			got := node.Annotations[kwok.RegisterAfterAnnotationKey]
			if got != tc.want {
				t.Errorf("registration time = %q, want %q", got, tc.want)
			}
			if handed := node.Annotations[kwok.KwokNodeAnnotationKey] == kwok.KwokNodeAnnotationValue; handed != (tc.want == "") {
				t.Errorf("handed to kwok at launch = %v, want %v", handed, tc.want == "")
			}
		})
	}
}
