// Package webhook serves the CRD conversion webhook of NodePools, NodeClaims
// and EC2NodeClasses (karpenter.sh and karpenter.k8s.aws, v1beta1 <-> v1)
// from the controller's webhook server, so that clients still on v1beta1
// read and write objects stored as v1. Each object of the API server's
// ConversionReview goes through conversion.Converter.ConvertJSON; a NodeClaim
// reads its NodePool (expireAfter) live from the API server.
//
// The TLS certificate is issued, renewed and trusted by
// github.com/open-policy-agent/cert-controller's rotator: it keeps a CA and a
// serving certificate in a Secret and injects the CA into the caBundle of
// each CRD's conversion webhook. The API server checks the certificate
// against the name it calls: <service>.<namespace>.svc in a cluster, the
// URL's host (localhost) for the local control plane.
//
// # Wiring
//
// The CRDs must declare the webhook (the generated ones in api/crds say
// strategy None, and generated files are never patched), and the manager's
// webhook server must use ServerOptions:
//
//	// In a cluster: the Service in front of the pod, and the Secret mounted
//	// at CertDir (or WriteCertFiles with an emptyDir there).
//	w, err := webhook.New(webhook.Options{ServiceNamespace: "karpenter", ServiceName: "dovetail", CertDir: "/certs"})
//	// `dovetail up`: the API server calls https://localhost:9443/convert.
//	w, err := webhook.New(webhook.LocalOptions(9443, filepath.Join(workDir, "webhook-certs")))
//
//	err = crdinstall.Install(ctx, cfg, crdinstall.WithWebhookConversion(all, w.ClientConfig()), time.Minute)
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{..., WebhookServer: crwebhook.NewServer(w.ServerOptions())})
//	ready, err := w.Setup(ctx, mgr)
//	err = mgr.AddReadyzCheck("conversion-webhook", ready)
//
// The readiness check fails until the API server can call the webhook (the
// CA is injected into every CRD and the server presents a certificate it
// verifies), so nothing should read objects through a version other than the
// stored one before it passes. Reading v1 objects stored as v1 never calls
// the webhook.
//
// Install the CRDs before, or soon after, starting the manager: the rotator
// stops the manager when it cannot inject the CA within its retries (about
// 8 to 17 minutes), as it does when the certificate files never appear.
//
// In a cluster, the process needs RBAC to get, list, watch, create and update
// the Secret's namespace's Secrets, to get, list, watch and update
// CustomResourceDefinitions, and to get NodePools.
package webhook
