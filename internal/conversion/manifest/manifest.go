package manifest

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// Target versions.
const (
	// TargetV1 converts to karpenter.sh/v1 and karpenter.k8s.aws/v1.
	TargetV1 = "v1"
	// TargetV1beta1 converts to karpenter.sh/v1beta1 and karpenter.k8s.aws/v1beta1.
	TargetV1beta1 = "v1beta1"
)

// Options configure a conversion.
type Options struct {
	// To is the target version, TargetV1 (the default when empty) or TargetV1beta1.
	To string
	// IgnoreDefaults leaves out the requirements the v1alpha5 defaulting
	// webhook added to a Provisioner (linux, amd64, on-demand, c/m/r
	// categories of generation > 2), as karpenter-convert --ignore-defaults did.
	IgnoreDefaults bool
	// ContinueOnError converts every document it can and leaves out the ones
	// it cannot; otherwise any error means no output at all.
	ContinueOnError bool
}

// Input is one source of YAML: a file or stdin.
type Input struct {
	// Source names the input in errors and warnings.
	Source string
	// Data is the YAML stream.
	Data []byte
}

// Result is the outcome of a conversion.
type Result struct {
	// Output is the converted YAML stream, documents separated by "---".
	Output []byte
	// Warnings tell what the user should check or finish by hand, one line each.
	Warnings []string
	// Converted counts the objects written by conversion.
	Converted int
	// PassedThrough counts the documents written unchanged: other kinds, and
	// objects already at the target version.
	PassedThrough int
}

// Convert converts one YAML stream; see Converter.ConvertAll.
func Convert(input []byte, source string, opts Options) (Result, error) {
	return ConvertAll([]Input{{Source: source, Data: input}}, opts)
}

// ConvertAll converts the documents of all inputs as one stream; see
// Converter.ConvertAll.
func ConvertAll(inputs []Input, opts Options) (Result, error) {
	c, err := NewConverter()
	if err != nil {
		return Result{}, err
	}
	return c.ConvertAll(inputs, opts)
}

// Converter converts manifests. It holds nothing but the CRD schemas it
// validates against, compiled on first use and reused by later calls, so a
// caller converting many inputs (or a test suite) pays for compiling them
// once. It is safe for concurrent use.
type Converter struct {
	schemas *schemas
}

// NewConverter returns a Converter for the CRDs generated from the API types.
func NewConverter() (*Converter, error) {
	s, err := newSchemas()
	if err != nil {
		return nil, err
	}
	return &Converter{schemas: s}, nil
}

// ConvertAll converts the documents of all inputs, in order, as one stream:
// a NodeClaim finds its NodePool, and a NodePool's kubelet settings find its
// EC2NodeClass, in any of the inputs. The error joins a *DocumentError per
// document that could not be converted; without ContinueOnError the Result
// then has no output.
func (c *Converter) ConvertAll(inputs []Input, opts Options) (Result, error) {
	switch opts.To {
	case "":
		opts.To = TargetV1
	case TargetV1, TargetV1beta1:
	default:
		return Result{}, fmt.Errorf("unknown target version %q: want %s or %s", opts.To, TargetV1, TargetV1beta1)
	}
	run := &converter{opts: opts, schemas: c.schemas}
	return run.run(inputs)
}

// converter is the state of one ConvertAll call.
type converter struct {
	opts     Options
	schemas  *schemas
	convert  conversion.Converter
	items    []*item
	warnings []warning
}

// warning is a warning and the position of its document in the input, by
// which warnings are sorted so that each document's stay together.
type warning struct {
	pos  int
	text string
}

// item is one document of the input and what it becomes.
type item struct {
	doc *document
	// passThrough documents are written as they were.
	passThrough bool
	// objects converted from the document, in output order.
	objects []*object
	// err is set when the document cannot be converted.
	err error
}

// object is one converted object.
type object struct {
	// obj is the typed object: after decoding at v1beta1 or v1, after
	// conversion at the target version.
	obj runtime.Object
	// paths maps paths of the decoded form to the input's fields.
	paths pathMap
	// yaml is the serialized result.
	yaml []byte
}

// warn records a warning about document d.
func (c *converter) warn(d *document, format string, args ...any) {
	where := fmt.Sprintf("%s: document %d", d.source, d.index)
	if d.item > 0 {
		where += fmt.Sprintf(", item %d", d.item)
	}
	if d.typeMeta.Kind != "" {
		where += fmt.Sprintf(": %s %q", d.typeMeta.Kind, d.name)
	}
	c.warnings = append(c.warnings, warning{pos: d.pos, text: where + ": " + fmt.Sprintf(format, args...)})
}

func (c *converter) run(inputs []Input) (Result, error) {
	for _, in := range inputs {
		for i, ch := range SplitDocuments(in.Data) {
			docs, err := parseChunk(in.Source, i+1, ch)
			if err != nil {
				c.items = append(c.items, &item{doc: &document{source: in.Source, index: i + 1, line: ch.Line}, err: err})
				continue
			}
			for _, d := range docs {
				d.pos = len(c.items)
				c.items = append(c.items, c.decode(d))
			}
		}
	}
	c.toTarget()
	if c.opts.To == TargetV1 {
		c.moveKubelet()
	}
	c.warnDuplicates()
	for _, it := range c.items {
		c.serialize(it)
	}

	result := Result{}
	var errs []error
	var out [][]byte
	for _, it := range c.items {
		switch {
		case it.err != nil:
			errs = append(errs, it.err)
		case it.passThrough:
			out = append(out, it.passThroughYAML())
			result.PassedThrough++
		default:
			for _, o := range it.objects {
				out = append(out, o.yaml)
				result.Converted++
			}
		}
	}
	slices.SortStableFunc(c.warnings, func(a, b warning) int { return cmp.Compare(a.pos, b.pos) })
	for _, w := range c.warnings {
		result.Warnings = append(result.Warnings, w.text)
	}
	if len(errs) > 0 && !c.opts.ContinueOnError {
		return Result{Warnings: result.Warnings}, errors.Join(errs...)
	}
	result.Output = bytes.Join(out, []byte("---\n"))
	return result, errors.Join(errs...)
}

// warnDuplicates warns when two converted objects have the same kind and
// name (an inline provider named like an AWSNodeTemplate, say): applying the
// output would let the later replace the earlier.
func (c *converter) warnDuplicates() {
	first := map[string]*document{}
	for _, it := range c.items {
		if it.err != nil || it.passThrough {
			continue
		}
		for _, o := range it.objects {
			key := o.obj.GetObjectKind().GroupVersionKind().Kind + "/" + objectMeta(o.obj).Name
			if d, ok := first[key]; ok {
				c.warn(it.doc, "converts to %s, like %s document %d: applying both keeps only the later", key, d.source, d.index)
				continue
			}
			first[key] = it.doc
		}
	}
}

// passThroughYAML is the document as written, or for a List item its YAML.
func (it *item) passThroughYAML() []byte {
	if it.doc.raw != nil {
		return it.doc.raw
	}
	out, err := jsonToYAML(it.doc.json)
	if err != nil {
		return it.doc.json
	}
	return out
}
