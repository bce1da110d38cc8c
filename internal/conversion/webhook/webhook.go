package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// Webhook is the conversion webhook of one controller process: its
// options, the serving certificate its server presents, and (after Setup)
// the certificate rotator that issues that certificate and injects the CA
// into the CRDs.
type Webhook struct {
	opts Options
	cert *servingCertificate
	// isReady is closed by the rotator once the certificate files exist and
	// the CA was injected into the CRDs.
	isReady chan struct{}
}

// New validates opts and returns the webhook; nothing runs until Setup adds
// it to a manager.
func New(opts Options) (*Webhook, error) {
	opts, err := opts.complete()
	if err != nil {
		return nil, err
	}
	return &Webhook{
		opts: opts,
		cert: &servingCertificate{
			certPath: filepath.Join(opts.CertDir, CertName),
			keyPath:  filepath.Join(opts.CertDir, KeyName),
		},
	}, nil
}

// Options returns the options with their defaults filled in.
func (w *Webhook) Options() Options {
	o := w.opts
	o.DNSNames = slices.Clone(o.DNSNames)
	o.CRDNames = slices.Clone(o.CRDNames)
	return o
}

// ClientConfig is how the API server reaches the webhook; install the CRDs
// with crdinstall.WithWebhookConversion(crds, w.ClientConfig()).
func (w *Webhook) ClientConfig() apiextensionsv1.WebhookClientConfig {
	return w.opts.ClientConfig()
}

// ServerOptions are the settings of the manager's webhook server: create
// the manager with
//
//	ctrl.Options{WebhookServer: crwebhook.NewServer(w.ServerOptions())}
//
// They bind Host:Port and serve the certificate in CertDir through a
// GetCertificate that waits for the rotator's first certificate, so the
// server starts with the manager even before there is one. Further
// webhooks may be registered on the same server.
func (w *Webhook) ServerOptions() crwebhook.Options {
	return crwebhook.Options{
		Host:     w.opts.Host,
		Port:     w.opts.Port,
		CertDir:  w.opts.CertDir,
		CertName: CertName,
		KeyName:  KeyName,
		TLSOpts:  []func(*tls.Config){w.cert.configure},
	}
}

// Setup adds the webhook to mgr, which must have been created with
// ServerOptions:
//  1. it creates the certificate Secret if it is missing;
//  2. it adds cert-controller's rotator, which issues a CA and a serving
//     certificate into the Secret, renews them, and injects the CA into the
//     caBundle of each CRD's conversion webhook;
//  3. it adds the secretKeeper (re-creates a deleted Secret, and with
//     WriteCertFiles writes the certificate to CertDir) and the watcher that
//     loads the certificate into the server;
//  4. it registers the conversion Handler at Path on mgr's webhook server,
//     reading NodePools through mgr's API reader.
//
// The returned checker fails until the API server can call the webhook: the
// rotator is ready, every CRD names this webhook with a caBundle, and the
// server's certificate verifies against that caBundle. Add it as a readiness
// check (mgr.AddReadyzCheck), and wait for it before reading objects through
// a version other than the one they are stored in.
func (w *Webhook) Setup(ctx context.Context, mgr manager.Manager) (healthz.Checker, error) {
	if w.isReady != nil {
		return nil, errors.New("setting up the conversion webhook: already set up")
	}
	if err := w.checkServer(mgr.GetWebhookServer()); err != nil {
		return nil, err
	}
	key := types.NamespacedName{Namespace: w.opts.SecretNamespace, Name: w.opts.SecretName}
	keeper := &secretKeeper{key: key, writer: mgr.GetClient(), writeFiles: w.opts.WriteCertFiles, certDir: w.opts.CertDir}
	// 1. The rotator needs the Secret to exist when it starts. An installer
	// may have created it already and granted no right to create one.
	if err := mgr.GetAPIReader().Get(ctx, key, &corev1.Secret{}); apierrors.IsNotFound(err) {
		err = keeper.create(ctx)
		if err != nil {
			return nil, fmt.Errorf("setting up the conversion webhook: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("setting up the conversion webhook: reading the certificate Secret %s: %w", key, err)
	}
	// 2. The rotator.
	webhooks := make([]rotator.WebhookInfo, 0, len(w.opts.CRDNames))
	for _, name := range w.opts.CRDNames {
		webhooks = append(webhooks, rotator.WebhookInfo{Type: rotator.CRDConversion, Name: name})
	}
	w.isReady = make(chan struct{})
	if err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        w.opts.CertDir,
		CertName:       CertName,
		KeyName:        KeyName,
		CAName:         "dovetail-webhook-ca",
		CAOrganization: "dovetail",
		DNSName:        w.opts.serverName(),
		ExtraDNSNames:  w.opts.extraDNSNames(),
		IsReady:        w.isReady,
		Webhooks:       webhooks,
		FieldOwner:     "dovetail",
		// Every replica serves conversions; the rotators of several replicas
		// agree through the Secret's resourceVersion.
		RequireLeaderElection: false,
		// Inject the CA only once this replica can serve the certificate.
		EnableReadinessCheck: true,
		// Controller names are unique per process; one rotator per Secret.
		ControllerName: "conversion-cert-rotator-" + key.Namespace + "-" + key.Name,
	}); err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	// 3. The Secret's keeper and the server's certificate.
	if err := addSecretKeeper(mgr, keeper, "conversion-cert-secret-"+key.Namespace+"-"+key.Name); err != nil {
		return nil, err
	}
	if err := mgr.Add(w.cert); err != nil {
		return nil, fmt.Errorf("adding the serving certificate watcher: %w", err)
	}
	// 4. The handler.
	mgr.GetWebhookServer().Register(Path, &Handler{
		Converter: conversion.Converter{DefaultNodeClass: w.opts.DefaultNodeClass, NodePools: NodePoolReader(mgr.GetAPIReader())},
		Logger:    mgr.GetLogger().WithName("conversion-webhook"),
	})
	return (&readiness{opts: w.opts, isReady: w.isReady, reader: mgr.GetAPIReader()}).check, nil
}

// checkServer fails early, with the fix, when the manager's webhook server
// was not created with ServerOptions: it would fail at start for want of
// certificate files, or serve another port than the CRDs name.
func (w *Webhook) checkServer(server crwebhook.Server) error {
	s, ok := server.(*crwebhook.DefaultServer)
	if !ok {
		return nil // a custom server: its owner knows what it serves
	}
	if s.Options.Port != w.opts.Port || s.Options.Host != w.opts.Host || len(s.Options.TLSOpts) == 0 {
		return fmt.Errorf("setting up the conversion webhook: the manager's webhook server (host %q, port %d) was not created with the webhook's ServerOptions (host %q, port %d): create the manager with WebhookServer: sigs.k8s.io/controller-runtime/pkg/webhook.NewServer(w.ServerOptions())",
			s.Options.Host, s.Options.Port, w.opts.Host, w.opts.Port)
	}
	return nil
}
