package manifest

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
)

// schemas validates objects offline against the CRDs generated from the API
// types (api/crds), as the API server would on create: nulls pruned, defaults
// applied, then the OpenAPI schema (required fields, enums, patterns, bounds)
// and the CEL rules. Using the CRDs keeps one source of truth; a converted
// object the API server would reject is caught here, with its field.
// Compiling a version's CEL rules takes a tenth of a second, so validators
// are compiled once per schemas and shared; schemas is safe for concurrent use.
type schemas struct {
	crds       map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition
	mu         sync.Mutex
	validators map[schema.GroupVersionKind]*versionValidator
}

// versionValidator holds the compiled schema of one CRD version.
type versionValidator struct {
	structural *structuralschema.Structural
	openAPI    apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// newSchemas loads the embedded CRDs; validators are compiled on first use.
func newSchemas() (*schemas, error) {
	all, err := crds.All()
	if err != nil {
		return nil, fmt.Errorf("loading CRDs: %w", err)
	}
	s := &schemas{crds: map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{}, validators: map[schema.GroupVersionKind]*versionValidator{}}
	for _, crd := range all {
		s.crds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
	}
	return s, nil
}

// validator returns the compiled validator of gvk.
func (s *schemas) validator(gvk schema.GroupVersionKind) (*versionValidator, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.validators[gvk]; ok {
		return v, nil
	}
	crd, ok := s.crds[gvk.GroupKind()]
	if !ok {
		return nil, fmt.Errorf("no CRD for %s", gvk.GroupKind())
	}
	for _, version := range crd.Spec.Versions {
		if version.Name != gvk.Version || version.Schema == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(version.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("converting the %s schema: %w", gvk, err)
		}
		structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("reading the %s schema: %w", gvk, err)
		}
		openAPI, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return nil, fmt.Errorf("compiling the %s schema: %w", gvk, err)
		}
		v := &versionValidator{structural: structural, openAPI: openAPI, cel: cel.NewValidator(structural, true, celconfig.PerCallLimit)}
		s.validators[gvk] = v
		return v, nil
	}
	return nil, fmt.Errorf("the %s CRD has no version %s", gvk.GroupKind(), gvk.Version)
}

// validate checks obj, an object as JSON-decoded by apimachinery (integers as
// int64), against the CRD of its apiVersion and kind. obj is not modified.
func (s *schemas) validate(obj map[string]any) (field.ErrorList, error) {
	u := runtime.DeepCopyJSON(obj)
	gvk := schema.FromAPIVersionAndKind(stringAt(u, "apiVersion"), stringAt(u, "kind"))
	v, err := s.validator(gvk)
	if err != nil {
		return nil, err
	}
	defaulting.PruneNonNullableNullsWithoutDefaults(u, v.structural)
	defaulting.Default(u, v.structural)
	errs := apiservervalidation.ValidateCustomResource(nil, u, v.openAPI)
	if name := stringAt(objectAt(u, "metadata"), "name"); name == "" && stringAt(objectAt(u, "metadata"), "generateName") == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
	}
	if v.cel != nil {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, u, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	return errs, nil
}

func objectAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

func stringAt(m map[string]any, key string) string {
	v, _ := m[key].(string)
	return v
}
