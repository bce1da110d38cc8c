// Package crdinstall creates or updates CustomResourceDefinitions and waits
// until the API server serves them. `dovetail up`, the demo and the
// integration tests install Dovetail's generated CRDs with it, so that every
// environment runs exactly the committed schema.
package crdinstall

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// Install creates each CRD, or updates it when it exists, then waits until
// all of them are Established and their NamesAccepted, and until the API
// server's discovery lists every served version's resource: Established comes
// first, and a client whose REST mapper reads discovery in between fails with
// "no matches for kind" (seen in CI). An update keeps the
// caBundle a certificate rotator injected into the CRD's conversion webhook
// when crd declares the same webhook without one (see WithWebhookConversion).
// Last it creates or updates the ValidatingAdmissionPolicies that go with
// the CRDs (Policies), which hold rules of the storage version for writes
// through every version.
func Install(ctx context.Context, config *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	client, err := apiextensionsclient.NewForConfig(config)
	if err != nil {
		return fmt.Errorf("creating apiextensions client: %w", err)
	}
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		// A certificate rotator may update the CRD (its caBundle) between the
		// read and the write: read again and retry.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return createOrUpdate(ctx, crdClient, crd) }); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			got, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil //nolint:nilerr // retried until the timeout; the last error is reported below
			}
			return isEstablished(got), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := waitDiscoverable(ctx, client.Discovery(), crd, timeout); err != nil {
			return err
		}
	}
	return installPolicies(ctx, config, crds)
}

// waitDiscoverable polls the API server's discovery until every served
// version of crd lists the CRD's plural resource.
func waitDiscoverable(ctx context.Context, disco discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition, timeout time.Duration) error {
	for _, version := range crd.Spec.Versions {
		if !version.Served {
			continue
		}
		groupVersion := crd.Spec.Group + "/" + version.Name
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			list, err := disco.ServerResourcesForGroupVersion(groupVersion)
			if err != nil {
				return false, nil //nolint:nilerr // not yet discoverable; retried until the timeout
			}
			for _, r := range list.APIResources {
				if r.Name == crd.Spec.Names.Plural {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for %s in %s to appear in discovery: %w", crd.Spec.Names.Plural, groupVersion, err)
		}
	}
	return nil
}

// createOrUpdate creates crd, or updates the existing one to crd.
func createOrUpdate(ctx context.Context, crdClient apiextensionsv1client.CustomResourceDefinitionInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	existing, err := crdClient.Get(ctx, crd.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := crdClient.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading CRD %s: %w", crd.Name, err)
	default:
		updated := crd.DeepCopy()
		updated.ResourceVersion = existing.ResourceVersion
		keepInjectedCABundle(updated, existing)
		if _, err := crdClient.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
		}
	}
	return nil
}

func isEstablished(crd *apiextensionsv1.CustomResourceDefinition) bool {
	established, accepted := false, false
	for _, c := range crd.Status.Conditions {
		switch c.Type {
		case apiextensionsv1.Established:
			established = c.Status == apiextensionsv1.ConditionTrue
		case apiextensionsv1.NamesAccepted:
			accepted = c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return established && accepted
}
