package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	"github.com/dovetail-autoscaler/dovetail/api/legacy/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/api/legacy/v1alpha5"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// decode reads one document into the objects it converts to, at v1beta1 (from
// v1alpha5/v1alpha1) or at its own served version, and validates them. Other
// kinds pass through.
func (c *converter) decode(d *document) *item {
	it := &item{doc: d}
	switch gvk := d.typeMeta.GroupVersionKind(); gvk {
	case v1alpha5.SchemeGroupVersion.WithKind("Provisioner"):
		c.decodeProvisioner(it)
	case v1alpha1.SchemeGroupVersion.WithKind("AWSNodeTemplate"):
		c.decodeNodeTemplate(it)
	case v1alpha5.SchemeGroupVersion.WithKind("Machine"):
		c.decodeMachine(it)
	default:
		obj, err := conversion.NewObject(gvk)
		if err != nil {
			it.passThrough = true
			if keys := oldKeysIn(d.json); len(keys) > 0 {
				c.warn(d, "passed through unchanged but uses %s: Dovetail reads %s (label) and %s (annotation) instead",
					strings.Join(keys, ", "), v1.NodePoolLabelKey, v1.DoNotDisruptAnnotationKey)
			}
			return it
		}
		c.decodeServed(it, obj, gvk.Version)
	}
	return it
}

// decodeServed reads a NodePool, NodeClaim or EC2NodeClass of a served version.
// One already at the target version passes through unchanged but still serves
// as a NodePool to look up or a reference to check.
func (c *converter) decodeServed(it *item, obj runtime.Object, version string) {
	d := it.doc
	if errs := decodeStrict(d.json, obj, nil); len(errs) > 0 {
		it.err = fieldErrors(d, errs, nil)
		return
	}
	if !c.validInput(it, d.json) {
		return
	}
	it.objects = []*object{{obj: obj}}
	if version == c.opts.To {
		it.passThrough = true
		return
	}
	clean(obj)
	for _, note := range applyRenames(obj) {
		c.warn(d, "%s", note)
	}
}

// validInput validates a served-version document as written.
func (c *converter) validInput(it *item, data []byte) bool {
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		it.err = &DocumentError{Source: it.doc.source, Index: it.doc.index, Item: it.doc.item, Line: it.doc.line, Err: err}
		return false
	}
	errs, err := c.schemas.validate(m)
	if err != nil {
		it.err = &DocumentError{Source: it.doc.source, Index: it.doc.index, Item: it.doc.item, Line: it.doc.line, Err: err}
		return false
	}
	if len(errs) > 0 {
		it.err = fieldErrors(it.doc, errs, nil)
		return false
	}
	return true
}

// clean keeps, of a served-version object being converted, what a manifest
// holds: name, labels, annotations, finalizers; no status. The server-set
// fields of `kubectl get -o yaml` output would make the manifest conflict on
// apply, and the status is recomputed by the controller.
func clean(obj runtime.Object) {
	switch o := obj.(type) {
	case *v1beta1.NodePool:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), v1beta1.NodePoolStatus{}
	case *v1.NodePool:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), v1.NodePoolStatus{}
	case *v1beta1.NodeClaim:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), v1beta1.NodeClaimStatus{}
	case *v1.NodeClaim:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), v1.NodeClaimStatus{}
	case *awsv1beta1.EC2NodeClass:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), awsv1beta1.EC2NodeClassStatus{}
	case *awsv1.EC2NodeClass:
		o.ObjectMeta, o.Status = keptMeta(o.ObjectMeta), awsv1.EC2NodeClassStatus{}
	}
}

func (c *converter) decodeProvisioner(it *item) {
	d := it.doc
	p := &v1alpha5.Provisioner{}
	if errs := decodeStrict(d.json, p, nil); len(errs) > 0 {
		it.err = fieldErrors(d, errs, nil)
		return
	}
	np, nc, r := provisionerToNodePool(p, c.opts.IgnoreDefaults)
	if len(r.errs) > 0 {
		it.err = fieldErrors(d, r.errs, nil)
		return
	}
	c.addLegacy(it, r, &object{obj: np, paths: provisionerPaths(len(p.Spec.Requirements), p.Spec.Provider != nil)})
	if nc != nil && it.err == nil {
		c.addLegacy(it, legacyResult{}, &object{obj: nc, paths: nodeTemplatePaths("spec.provider")})
	}
}

func (c *converter) decodeNodeTemplate(it *item) {
	d := it.doc
	t := &v1alpha1.AWSNodeTemplate{}
	if errs := decodeStrict(d.json, t, nil); len(errs) > 0 {
		it.err = fieldErrors(d, errs, nil)
		return
	}
	nc, r := nodeTemplateToEC2NodeClass(t, field.NewPath("spec"))
	if len(r.errs) > 0 {
		it.err = fieldErrors(d, r.errs, nil)
		return
	}
	c.addLegacy(it, r, &object{obj: nc, paths: nodeTemplatePaths("spec")})
}

func (c *converter) decodeMachine(it *item) {
	d := it.doc
	m := &v1alpha5.Machine{}
	if errs := decodeStrict(d.json, m, nil); len(errs) > 0 {
		it.err = fieldErrors(d, errs, nil)
		return
	}
	nc, r := machineToNodeClaim(m)
	c.addLegacy(it, r, &object{obj: nc, paths: machinePaths})
}

// addLegacy validates a v1beta1 object converted from v1alpha5/v1alpha1,
// reporting errors at the input's fields, and adds it to the item.
func (c *converter) addLegacy(it *item, r legacyResult, o *object) {
	for _, w := range r.warnings {
		c.warn(it.doc, "%s", w)
	}
	for _, note := range applyRenames(o.obj) {
		if path, rest, ok := strings.Cut(note, ": "); ok {
			note = o.paths(path) + ": " + rest
		}
		c.warn(it.doc, "%s", note)
	}
	m, err := toMap(o.obj)
	if err == nil {
		var errs field.ErrorList
		if errs, err = c.schemas.validate(m); err == nil && len(errs) > 0 {
			it.err = fieldErrors(it.doc, errs, o.paths)
			return
		}
	}
	if err != nil {
		it.err = &DocumentError{Source: it.doc.source, Index: it.doc.index, Item: it.doc.item, Line: it.doc.line, Kind: it.doc.typeMeta.Kind, Name: it.doc.name, Err: err}
		return
	}
	it.objects = append(it.objects, o)
}

// toMap encodes a typed object as apimachinery decodes JSON: integers as int64.
func toMap(obj runtime.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	return m, nil
}

// objectMeta returns the metadata of a converted object.
func objectMeta(obj runtime.Object) *metav1.ObjectMeta {
	if o, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m
		}
	}
	return &metav1.ObjectMeta{}
}

// yamlToMap decodes a YAML object as apimachinery does.
func yamlToMap(data []byte) (map[string]any, error) {
	j, err := jsonFromYAML(data)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(j, &m); err != nil {
		return nil, err
	}
	return m, nil
}
