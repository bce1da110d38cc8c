package conversion_test

import (
	"context"
	"net"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion/webhook"
	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// conversionWebhook is a conversion webhook served by a manager of the test.
type conversionWebhook struct {
	*webhook.Webhook
	ready  healthz.Checker
	secret types.NamespacedName
}

// serveConversions starts a webhook, installs the CRDs to call it and waits
// until it is ready. It stops at the end of the test; the CRDs keep pointing
// at it until the next test installs its own.
func serveConversions(t *testing.T) *conversionWebhook {
	t.Helper()
	w := startWebhook(t)
	w.install(t)
	w.waitReady(t)
	return w
}

// startWebhook starts a manager serving a conversion webhook on a free
// loopback port, the way `dovetail up` does (URL mode, certificate files
// written from the Secret), with a Secret of its own.
func startWebhook(t *testing.T) *conversionWebhook {
	t.Helper()
	opts := webhook.LocalOptions(freePort(t), t.TempDir())
	opts.SecretName = "webhook-" + dnsLabel(t.Name())
	secret := types.NamespacedName{Namespace: opts.SecretNamespace, Name: opts.SecretName}
	w, err := webhook.New(opts)
	if err != nil {
		t.Fatalf("configuring the webhook: %v", err)
	}
	mgr, err := ctrl.NewManager(testEnv.ControlPlane.RESTConfig, ctrl.Options{
		Scheme:                 testEnv.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          crwebhook.NewServer(w.ServerOptions()),
		Controller:             operator.ControllerConfig(true),
	})
	if err != nil {
		t.Fatalf("creating manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, err := w.Setup(ctx, mgr)
	if err != nil {
		cancel()
		t.Fatalf("setting up the webhook: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with error: %v", err)
		}
		_ = testEnv.Clientset.CoreV1().Secrets(secret.Namespace).Delete(context.Background(), secret.Name, metav1.DeleteOptions{})
	})
	return &conversionWebhook{Webhook: w, ready: ready, secret: secret}
}

// install installs Dovetail's CRDs with strategy Webhook calling w.
func (w *conversionWebhook) install(t *testing.T) {
	t.Helper()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := crdinstall.Install(ctx, testEnv.ControlPlane.RESTConfig, crdinstall.WithWebhookConversion(all, w.ClientConfig()), time.Minute); err != nil {
		t.Fatalf("installing the CRDs with webhook conversion: %v", err)
	}
}

// waitReady waits until the webhook's readiness check passes.
func (w *conversionWebhook) waitReady(t *testing.T) {
	t.Helper()
	env.Eventually(t, 2*time.Minute, "the conversion webhook to be ready", func(ctx context.Context) (bool, error) {
		return true, w.ready(httptest.NewRequestWithContext(ctx, "GET", "/readyz", nil))
	})
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// dnsLabel turns a test name into a DNS label.
func dnsLabel(name string) string {
	s := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 50 {
		s = strings.Trim(s[len(s)-50:], "-")
	}
	return s
}

// resourceFor returns the resource of a Dovetail kind at a version.
func resourceFor(t *testing.T, kind, version string) schema.GroupVersionResource {
	t.Helper()
	switch kind {
	case "NodePool":
		return schema.GroupVersionResource{Group: "karpenter.sh", Version: version, Resource: "nodepools"}
	case "NodeClaim":
		return schema.GroupVersionResource{Group: "karpenter.sh", Version: version, Resource: "nodeclaims"}
	case "EC2NodeClass":
		return schema.GroupVersionResource{Group: "karpenter.k8s.aws", Version: version, Resource: "ec2nodeclasses"}
	}
	t.Fatalf("no resource for kind %q", kind)
	return schema.GroupVersionResource{}
}

// dyn returns a dynamic client for kind at version, as kubectl talks to
// nodepools.v1beta1.karpenter.sh.
func dyn(t *testing.T, kind, version string) dynamic.ResourceInterface {
	t.Helper()
	c, err := dynamic.NewForConfig(testEnv.ControlPlane.RESTConfig)
	if err != nil {
		t.Fatalf("creating dynamic client: %v", err)
	}
	return c.Resource(resourceFor(t, kind, version))
}

// get reads obj's kind and name at version.
func get(t *testing.T, kind, name, version string) *unstructured.Unstructured {
	t.Helper()
	got, err := dyn(t, kind, version).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading %s %s as %s: %v", kind, name, version, err)
	}
	return got
}

// create creates obj at its apiVersion, deletes it at the end of the test,
// and returns what the API server answered.
func create(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	created, err := tryCreate(t, obj)
	if err != nil {
		t.Fatalf("creating %s %s as %s: %v", obj.GetKind(), obj.GetName(), obj.GetAPIVersion(), err)
	}
	return created
}

// tryCreate is create, returning the error.
func tryCreate(t *testing.T, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	c := dyn(t, obj.GetKind(), gv.Version)
	created, err := c.Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
	return created, nil
}
