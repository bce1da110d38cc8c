package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
)

// dialTimeout bounds the readiness check's TLS handshake with the local
// webhook server.
const dialTimeout = 5 * time.Second

// readiness checks that the API server can call this webhook.
type readiness struct {
	opts    Options
	isReady <-chan struct{}
	reader  client.Reader
}

// check implements healthz.Checker:
//  1. the rotator has written the certificate and injected the CA once;
//  2. each CRD converts through this webhook (URL or Service) and has a
//     caBundle;
//  3. the certificate the server presents now verifies against each
//     caBundle for the name the API server checks (a CA rotation is thus
//     not ready until both the CRDs and the server have the new one).
func (r *readiness) check(req *http.Request) error {
	select {
	case <-r.isReady:
	default:
		return errors.New("the conversion webhook's certificate is not issued and injected yet")
	}
	ctx := context.Background()
	if req != nil {
		ctx = req.Context()
	}
	want := r.opts.ClientConfig()
	verified := map[string]bool{}
	for _, name := range r.opts.CRDNames {
		crd, err := getCRD(ctx, r.reader, name)
		if err != nil {
			return err
		}
		got := webhookClientConfig(crd)
		switch {
		case got == nil:
			return fmt.Errorf("CRD %s does not convert through a webhook: install it with crdinstall.WithWebhookConversion", name)
		case !crdinstall.SameWebhook(got, &want):
			return fmt.Errorf("CRD %s converts through another webhook (%s), not this one (%s)", name, describeClientConfig(got), describeClientConfig(&want))
		case len(got.CABundle) == 0:
			return fmt.Errorf("CRD %s: no CA injected into its conversion webhook yet", name)
		case verified[string(got.CABundle)]:
			continue
		}
		if err := r.verifyServer(ctx, got.CABundle); err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
		verified[string(got.CABundle)] = true
	}
	return nil
}

// verifyServer completes a TLS handshake with the local webhook server,
// trusting only caBundle, as the API server will.
func (r *readiness) verifyServer(ctx context.Context, caBundle []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caBundle) {
		return errors.New("the injected caBundle holds no PEM certificate")
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: dialTimeout},
		Config:    &tls.Config{RootCAs: pool, ServerName: r.opts.serverName(), MinVersion: tls.VersionTLS12},
	}
	conn, err := dialer.DialContext(ctx, "tcp", r.opts.localAddress())
	if err != nil {
		return fmt.Errorf("the webhook server's certificate does not verify against the injected CA: %w", err)
	}
	return conn.Close()
}

// getCRD reads a CRD through reader as unstructured, so the manager's scheme
// need not know apiextensions.
func getCRD(ctx context.Context, reader client.Reader, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
		return nil, fmt.Errorf("reading CRD %s: %w", name, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
		return nil, fmt.Errorf("decoding CRD %s: %w", name, err)
	}
	return crd, nil
}

// webhookClientConfig returns the CRD's conversion webhook configuration,
// or nil when it does not convert through a webhook.
func webhookClientConfig(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.WebhookClientConfig {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil {
		return nil
	}
	return c.Webhook.ClientConfig
}

// describeClientConfig names a webhook endpoint for messages.
func describeClientConfig(c *apiextensionsv1.WebhookClientConfig) string {
	switch {
	case c.URL != nil:
		return *c.URL
	case c.Service != nil:
		port := int32(DefaultServicePort)
		if c.Service.Port != nil {
			port = *c.Service.Port
		}
		path := ""
		if c.Service.Path != nil {
			path = *c.Service.Path
		}
		return fmt.Sprintf("service %s/%s:%d%s", c.Service.Namespace, c.Service.Name, port, path)
	}
	return "nowhere"
}
