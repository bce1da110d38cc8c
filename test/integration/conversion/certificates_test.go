package conversion_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion/webhook"
	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// caBundles returns the caBundle of each CRD that converts through a
// webhook, by CRD name.
func caBundles(ctx context.Context, t *testing.T) (map[string][]byte, error) {
	t.Helper()
	c, err := apiextensionsclient.NewForConfig(testEnv.ControlPlane.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	bundles := map[string][]byte{}
	for _, name := range webhook.DefaultCRDNames() {
		crd, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if conv := crd.Spec.Conversion; conv != nil && conv.Webhook != nil && conv.Webhook.ClientConfig != nil {
			bundles[name] = conv.Webhook.ClientConfig.CABundle
		}
	}
	return bundles, nil
}

// secretCA returns the CA certificate in the webhook's Secret.
func (w *conversionWebhook) secretCA(ctx context.Context) ([]byte, error) {
	secret, err := testEnv.Clientset.CoreV1().Secrets(w.secret.Namespace).Get(ctx, w.secret.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if len(secret.Data["ca.crt"]) == 0 {
		return nil, fmt.Errorf("secret %s has no CA yet", w.secret)
	}
	return secret.Data["ca.crt"], nil
}

// injected returns the CA that all three CRDs carry, or an error when they
// do not all carry the same one.
func injected(ctx context.Context, t *testing.T) ([]byte, error) {
	t.Helper()
	bundles, err := caBundles(ctx, t)
	if err != nil {
		return nil, err
	}
	var ca []byte
	for _, name := range webhook.DefaultCRDNames() {
		b := bundles[name]
		switch {
		case len(b) == 0:
			return nil, fmt.Errorf("CRD %s has no caBundle", name)
		case ca != nil && !bytes.Equal(ca, b):
			return nil, fmt.Errorf("CRD %s has another caBundle than the others", name)
		}
		ca = b
	}
	return ca, nil
}

// TestCertificateRotation checks that the rotator's CA is injected into all
// three CRDs, and that a lost Secret (deleted, or emptied as a way to force
// rotation) leads to a new CA, injected everywhere, with conversions
// working again.
func TestCertificateRotation(t *testing.T) {
	w := serveConversions(t)
	ctx := context.Background()
	np := object(t, `{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: rotation},
		spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}, requirements: [], expireAfter: 720h}}, disruption: {consolidateAfter: 0s}}}`)
	create(t, np)

	first, err := injected(ctx, t)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err := w.secretCA(ctx); err != nil || !bytes.Equal(ca, first) {
		t.Fatalf("the CRDs carry another CA than the Secret's (%v)", err)
	}
	get(t, "NodePool", np.GetName(), "v1beta1")

	rotations := map[string]func(t *testing.T){
		"the Secret is deleted": func(t *testing.T) {
			if err := testEnv.Clientset.CoreV1().Secrets(w.secret.Namespace).Delete(ctx, w.secret.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("deleting the Secret: %v", err)
			}
		},
		"the Secret is emptied": func(t *testing.T) {
			secret, err := testEnv.Clientset.CoreV1().Secrets(w.secret.Namespace).Get(ctx, w.secret.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			secret.Data = nil
			if _, err := testEnv.Clientset.CoreV1().Secrets(w.secret.Namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("emptying the Secret: %v", err)
			}
		},
	}
	previous := first
	for _, name := range []string{"the Secret is deleted", "the Secret is emptied"} {
		t.Run(name, func(t *testing.T) {
			rotations[name](t)
			env.Eventually(t, 2*time.Minute, "a new CA in the Secret and all CRDs", func(ctx context.Context) (bool, error) {
				ca, err := w.secretCA(ctx)
				if err != nil {
					return false, err
				}
				if bytes.Equal(ca, previous) {
					return false, fmt.Errorf("the Secret still holds the old CA")
				}
				got, err := injected(ctx, t)
				if err != nil {
					return false, err
				}
				if !bytes.Equal(got, ca) {
					return false, fmt.Errorf("the CRDs do not carry the Secret's new CA yet")
				}
				previous = ca
				return true, nil
			})
			w.waitReady(t)
			env.Eventually(t, time.Minute, "a conversion with the new certificate", func(ctx context.Context) (bool, error) {
				_, err := dyn(t, "NodePool", "v1beta1").Get(ctx, np.GetName(), metav1.GetOptions{})
				return err == nil, err
			})
		})
	}
}

// TestReadinessFollowsTheCRDs checks the readiness check the operator adds:
// it fails until the CRDs call this webhook with the injected CA, and again
// when they are pointed elsewhere.
func TestReadinessFollowsTheCRDs(t *testing.T) {
	ctx := context.Background()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	// CRDs as generated (strategy None), as the environment installs them.
	if err := crdinstall.Install(ctx, testEnv.ControlPlane.RESTConfig, all, time.Minute); err != nil {
		t.Fatal(err)
	}
	w := startWebhook(t)
	env.Eventually(t, time.Minute, "the rotator to issue a certificate", func(ctx context.Context) (bool, error) {
		_, err := w.secretCA(ctx)
		return err == nil, err
	})
	if err := w.ready(nil); err == nil {
		t.Fatal("the webhook is ready while the CRDs do not call it")
	}

	w.install(t)
	w.waitReady(t)
	if _, err := injected(ctx, t); err != nil {
		t.Fatalf("ready, but: %v", err)
	}

	// Another webhook's CRDs: not ready, and the check says why.
	elsewhere := crdinstall.WithWebhookConversion(all, apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://localhost:1/convert")})
	if err := crdinstall.Install(ctx, testEnv.ControlPlane.RESTConfig, elsewhere, time.Minute); err != nil {
		t.Fatal(err)
	}
	err = w.ready(nil)
	if err == nil || !strings.Contains(err.Error(), "converts through another webhook (https://localhost:1/convert)") {
		t.Errorf("readiness with the CRDs pointing elsewhere: %v", err)
	}
	w.install(t)
	w.waitReady(t)
}
