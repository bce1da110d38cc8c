package crdinstall

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// policyFiles are the ValidatingAdmissionPolicies (each with its binding)
// that go with a CRD, one file per CRD named like its CRD file
// (<group>_<plural>.yaml). They enforce rules the CRD's schema cannot for
// every served version: the API server validates a custom resource against
// the schema of the request's version only.
//
//go:embed policies/*.yaml
var policyFiles embed.FS

// Policy is a ValidatingAdmissionPolicy with its binding.
type Policy struct {
	// CRD is the name of the CustomResourceDefinition the policy goes with;
	// Install installs the policy with it.
	CRD string
	// Policy is the policy.
	Policy *admissionregistrationv1.ValidatingAdmissionPolicy
	// Binding binds the policy to every object it matches.
	Binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding
}

// Policies returns the admission policies that go with Dovetail's CRDs, in a
// stable order (by file name). Every call returns fresh objects.
func Policies() ([]Policy, error) {
	names, err := fs.Glob(policyFiles, "policies/*.yaml")
	if err != nil {
		return nil, fmt.Errorf("listing embedded admission policies: %w", err)
	}
	sort.Strings(names)
	policies := make([]Policy, 0, len(names))
	for _, name := range names {
		data, err := policyFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded admission policy %s: %w", name, err)
		}
		p, err := decodePolicy(data)
		if err != nil {
			return nil, fmt.Errorf("decoding embedded admission policy %s: %w", name, err)
		}
		group, plural, ok := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(name, "policies/"), ".yaml"), "_")
		if !ok {
			return nil, fmt.Errorf("embedded admission policy %s: file name is not <group>_<plural>.yaml", name)
		}
		p.CRD = plural + "." + group
		policies = append(policies, p)
	}
	return policies, nil
}

// PolicyFile returns the embedded file of the policy that goes with the CRD
// file name crdFile (<group>_<plural>.yaml), and whether there is one; the
// dovetail-crd chart ships a copy of each.
func PolicyFile(crdFile string) ([]byte, bool) {
	data, err := policyFiles.ReadFile("policies/" + crdFile)
	return data, err == nil
}

// decodePolicy decodes a file of two YAML documents: a policy and its
// binding.
func decodePolicy(data []byte) (Policy, error) {
	var p Policy
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return p, err
		}
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			p.Policy = &admissionregistrationv1.ValidatingAdmissionPolicy{}
			if err := yaml.UnmarshalStrict(doc, p.Policy); err != nil {
				return p, err
			}
		case "ValidatingAdmissionPolicyBinding":
			p.Binding = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
			if err := yaml.UnmarshalStrict(doc, p.Binding); err != nil {
				return p, err
			}
		default:
			return p, fmt.Errorf("unexpected kind %q", meta.Kind)
		}
	}
	if p.Policy == nil || p.Binding == nil || p.Binding.Spec.PolicyName != p.Policy.Name {
		return p, fmt.Errorf("want a ValidatingAdmissionPolicy and a binding of it")
	}
	return p, nil
}

// installPolicies creates or updates the policies that go with crds. The
// API server type-checks a policy against the schema of the resources it
// matches, so it runs once the CRDs are served. It does not wait for the
// API server to enforce them: that takes a moment after the write and
// shows only in what it admits.
func installPolicies(ctx context.Context, config *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	all, err := Policies()
	if err != nil {
		return err
	}
	installed := map[string]bool{}
	for _, crd := range crds {
		installed[crd.Name] = true
	}
	var client kubernetes.Interface
	for _, p := range all {
		if !installed[p.CRD] {
			continue
		}
		if client == nil {
			if client, err = kubernetes.NewForConfig(config); err != nil {
				return fmt.Errorf("creating Kubernetes client: %w", err)
			}
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return createOrUpdatePolicy(ctx, client, p) }); err != nil {
			return err
		}
	}
	return nil
}

// createOrUpdatePolicy creates p's policy and binding, or updates them to p.
func createOrUpdatePolicy(ctx context.Context, client kubernetes.Interface, p Policy) error {
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	existing, err := policies.Get(ctx, p.Policy.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = policies.Create(ctx, p.Policy, metav1.CreateOptions{})
	case err == nil:
		p.Policy.ResourceVersion = existing.ResourceVersion
		_, err = policies.Update(ctx, p.Policy, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("installing ValidatingAdmissionPolicy %s: %w", p.Policy.Name, err)
	}
	bindings := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	existingBinding, err := bindings.Get(ctx, p.Binding.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = bindings.Create(ctx, p.Binding, metav1.CreateOptions{})
	case err == nil:
		p.Binding.ResourceVersion = existingBinding.ResourceVersion
		_, err = bindings.Update(ctx, p.Binding, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("installing ValidatingAdmissionPolicyBinding %s: %w", p.Binding.Name, err)
	}
	return nil
}
