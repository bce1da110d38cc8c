package manifest

import (
	"errors"
	"fmt"

	sigsyaml "sigs.k8s.io/yaml"
)

// serialize writes each converted object of it as YAML in the documented
// field order (keys sorted, as sigs.k8s.io/yaml and kubectl print them) and
// validates it against the CRD of its version. An object the API server would
// reject is an error, not output.
func (c *converter) serialize(it *item) {
	if it.err != nil || it.passThrough {
		return
	}
	for _, o := range it.objects {
		m, err := toMap(o.obj)
		if err != nil {
			it.err = c.docError(it, err)
			return
		}
		tidy(m)
		errs, err := c.schemas.validate(m)
		if err != nil {
			it.err = c.docError(it, err)
			return
		}
		if len(errs) > 0 {
			gvk := o.obj.GetObjectKind().GroupVersionKind()
			it.err = fieldErrorsWith(it.doc, errs, o.paths, fmt.Sprintf("cannot be represented as %s %s: ", gvk.GroupVersion(), gvk.Kind))
			return
		}
		if o.yaml, err = sigsyaml.Marshal(m); err != nil {
			it.err = c.docError(it, err)
			return
		}
	}
}

// docError wraps err with the location of it's document, unless it already
// says where it is.
func (c *converter) docError(it *item, err error) error {
	var de *DocumentError
	if errors.As(err, &de) {
		return err
	}
	d := it.doc
	return &DocumentError{Source: d.source, Index: d.index, Item: d.item, Line: d.line, Kind: d.typeMeta.Kind, Name: d.name, Err: err}
}

// tidy removes what a typed object writes but a manifest does not need: null
// values (metadata.creationTimestamp, an unset lastPodEventTime) and empty
// status, template metadata and resources, as karpenter-convert's output did.
func tidy(m map[string]any) {
	dropNulls(m)
	dropEmpty(m, "status")
	if spec, ok := m["spec"].(map[string]any); ok {
		dropEmpty(spec, "resources")
		if template, ok := spec["template"].(map[string]any); ok {
			dropEmpty(template, "metadata")
			if tspec, ok := template["spec"].(map[string]any); ok {
				dropEmpty(tspec, "resources")
			}
		}
	}
}

func dropNulls(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range x {
			dropNulls(e)
		}
	}
}

func dropEmpty(m map[string]any, key string) {
	if v, ok := m[key].(map[string]any); ok && len(v) == 0 {
		delete(m, key)
	}
}

// jsonToYAML converts a JSON object to YAML in the documented field order.
func jsonToYAML(data []byte) ([]byte, error) {
	return sigsyaml.JSONToYAML(data)
}

// jsonFromYAML converts YAML to JSON, rejecting duplicate keys.
func jsonFromYAML(data []byte) ([]byte, error) {
	return sigsyaml.YAMLToJSONStrict(data)
}
