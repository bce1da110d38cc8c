package crdinstall

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// WithWebhookConversion returns deep copies of crds in which every CRD with
// more than one version converts between them through the webhook at
// clientConfig (spec.conversion.strategy Webhook, ConversionReview v1); a CRD
// with a single version is copied unchanged. The generated CRDs in api/crds
// declare no conversion (strategy None), because where the webhook lives (a
// Service in a cluster, a URL for the local control plane) is known only at
// install time, and generated files are never patched.
//
// clientConfig normally has no caBundle: the webhook's certificate rotator
// injects it, and Install keeps an injected caBundle when it updates a CRD
// whose webhook is unchanged.
func WithWebhookConversion(crds []*apiextensionsv1.CustomResourceDefinition, clientConfig apiextensionsv1.WebhookClientConfig) []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(crds))
	for _, crd := range crds {
		crd = crd.DeepCopy()
		if len(crd.Spec.Versions) > 1 {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig:             clientConfig.DeepCopy(),
					ConversionReviewVersions: []string{"v1"}, // the only version Dovetail's webhook understands
				},
			}
		}
		out = append(out, crd)
	}
	return out
}

// keepInjectedCABundle copies the caBundle of existing's conversion webhook
// into desired when desired has none and both call the same webhook (same
// Service or URL). Re-installing the CRDs (`dovetail up`, a test, an upgrade)
// then does not erase the CA that the certificate rotator injected, which
// would fail every conversion until the rotator injects it again.
func keepInjectedCABundle(desired, existing *apiextensionsv1.CustomResourceDefinition) {
	want, have := webhookClientConfig(desired), webhookClientConfig(existing)
	if want == nil || have == nil || len(want.CABundle) > 0 || len(have.CABundle) == 0 {
		return
	}
	if !SameWebhook(want, have) {
		return
	}
	want.CABundle = append([]byte(nil), have.CABundle...)
}

// SameWebhook reports whether two webhook client configurations call the
// same endpoint (the same URL, or the same Service, path and port with the
// API server's default port 443 filled in), whatever their caBundles.
func SameWebhook(a, b *apiextensionsv1.WebhookClientConfig) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if ptr.Deref(a.URL, "") != ptr.Deref(b.URL, "") {
		return false
	}
	return sameService(a.Service, b.Service)
}

// webhookClientConfig returns the CRD's conversion webhook client
// configuration, or nil when it does not convert through a webhook.
func webhookClientConfig(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.WebhookClientConfig {
	c := crd.Spec.Conversion
	if c == nil || c.Strategy != apiextensionsv1.WebhookConverter || c.Webhook == nil {
		return nil
	}
	return c.Webhook.ClientConfig
}

// sameService reports whether two service references name the same
// endpoint, with the API server's default port (443) filled in.
func sameService(a, b *apiextensionsv1.ServiceReference) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Namespace == b.Namespace && a.Name == b.Name &&
		ptr.Deref(a.Path, "") == ptr.Deref(b.Path, "") &&
		ptr.Deref(a.Port, 443) == ptr.Deref(b.Port, 443)
}
