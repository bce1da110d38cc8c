package crdinstall

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
)

func TestWithWebhookConversion(t *testing.T) {
	t.Parallel()
	all, err := crds.All()
	if err != nil {
		t.Fatal(err)
	}
	clientConfig := apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://localhost:9443/convert")}
	got := WithWebhookConversion(all, clientConfig)
	want := map[string]*apiextensionsv1.CustomResourceConversion{
		"nodepools.karpenter.sh":            {Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &clientConfig, ConversionReviewVersions: []string{"v1"}}},
		"nodeclaims.karpenter.sh":           {Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &clientConfig, ConversionReviewVersions: []string{"v1"}}},
		"ec2nodeclasses.karpenter.k8s.aws":  {Strategy: apiextensionsv1.WebhookConverter, Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: &clientConfig, ConversionReviewVersions: []string{"v1"}}},
		"kwoknodeclasses.karpenter.kwok.sh": nil, // a single version: nothing to convert
		"nodeoverlays.karpenter.sh":         nil, // v1alpha1 only
	}
	if len(got) != len(all) {
		t.Fatalf("WithWebhookConversion returned %d CRDs, want %d", len(got), len(all))
	}
	for i, crd := range got {
		wantConversion, ok := want[crd.Name]
		if !ok {
			t.Errorf("unexpected CRD %s", crd.Name)
			continue
		}
		if diff := cmp.Diff(wantConversion, crd.Spec.Conversion); diff != "" {
			t.Errorf("%s: conversion mismatch (-want +got):\n%s", crd.Name, diff)
		}
		if all[i].Spec.Conversion != nil {
			t.Errorf("%s: the input CRD was modified: %+v", crd.Name, all[i].Spec.Conversion)
		}
	}
}

func TestKeepInjectedCABundle(t *testing.T) {
	t.Parallel()
	service := func(port *int32, caBundle string) *apiextensionsv1.CustomResourceDefinition {
		return crdWithWebhook(apiextensionsv1.WebhookClientConfig{
			Service:  &apiextensionsv1.ServiceReference{Namespace: "karpenter", Name: "dovetail", Path: ptr.To("/convert"), Port: port},
			CABundle: []byte(caBundle),
		})
	}
	url := func(u, caBundle string) *apiextensionsv1.CustomResourceDefinition {
		return crdWithWebhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To(u), CABundle: []byte(caBundle)})
	}
	cases := map[string]struct {
		desired, existing *apiextensionsv1.CustomResourceDefinition
		want              string
	}{
		"same service, server-defaulted port": {desired: service(nil, ""), existing: service(ptr.To[int32](443), "CA"), want: "CA"},
		"same URL":                            {desired: url("https://localhost:1/convert", ""), existing: url("https://localhost:1/convert", "CA"), want: "CA"},
		"another URL":                         {desired: url("https://localhost:2/convert", ""), existing: url("https://localhost:1/convert", "CA"), want: ""},
		"another port":                        {desired: service(ptr.To[int32](8443), ""), existing: service(nil, "CA"), want: ""},
		"service replaces URL":                {desired: service(nil, ""), existing: url("https://localhost:1/convert", "CA"), want: ""},
		"desired brings its own CA":           {desired: url("https://localhost:1/convert", "NEW"), existing: url("https://localhost:1/convert", "CA"), want: "NEW"},
		"existing converts with None":         {desired: url("https://localhost:1/convert", ""), existing: &apiextensionsv1.CustomResourceDefinition{}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			keepInjectedCABundle(tc.desired, tc.existing)
			if diff := cmp.Diff(tc.want, string(webhookClientConfig(tc.desired).CABundle)); diff != "" {
				t.Errorf("caBundle mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeepInjectedCABundleWithoutWebhook(t *testing.T) {
	t.Parallel()
	desired := &apiextensionsv1.CustomResourceDefinition{}
	keepInjectedCABundle(desired, crdWithWebhook(apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://localhost:1/convert"), CABundle: []byte("CA")}))
	if desired.Spec.Conversion != nil {
		t.Errorf("a CRD without webhook conversion got one: %+v", desired.Spec.Conversion)
	}
}

func crdWithWebhook(clientConfig apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook:  &apiextensionsv1.WebhookConversion{ClientConfig: &clientConfig, ConversionReviewVersions: []string{"v1"}},
	}
	return crd
}
