package manifest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// DocumentError is what went wrong with one document of an input: where it is
// (source, document index, List item, line), what it is (kind and name), and
// which field is at fault.
type DocumentError struct {
	// Source names the input, usually a file name ("-" or "<stdin>" for stdin).
	Source string
	// Index is the 1-based position of the document among the non-empty
	// documents of Source; Item the 1-based position in a List, or 0.
	Index, Item int
	// Line is the line of Source the field (or else the document) is on.
	Line int
	// Kind and Name identify the object when they could be read.
	Kind, Name string
	// Field is the path of the offending field in the input, if known.
	Field string
	// Err says what is wrong.
	Err error
}

// Error formats the error as
// source: document 2 (line 14): Provisioner "default": spec.weight: detail.
func (e *DocumentError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: document %d", e.Source, e.Index)
	if e.Item > 0 {
		fmt.Fprintf(&b, ", item %d", e.Item)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", e.Line)
	}
	if e.Kind != "" {
		fmt.Fprintf(&b, ": %s %q", e.Kind, e.Name)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the underlying error.
func (e *DocumentError) Unwrap() error { return e.Err }

// fieldErrors turns field errors about d into DocumentErrors, mapping each
// field path with inputPath (nil keeps it) and locating it in d.
func fieldErrors(d *document, errs field.ErrorList, inputPath func(string) string) error {
	return fieldErrorsWith(d, errs, inputPath, "")
}

// fieldErrorsWith is fieldErrors with a prefix to each error's detail.
func fieldErrorsWith(d *document, errs field.ErrorList, inputPath func(string) string, prefix string) error {
	out := make([]error, 0, len(errs))
	for _, fe := range errs {
		path := fe.Field
		if inputPath != nil {
			path = inputPath(path)
		}
		out = append(out, &DocumentError{
			Source: d.source, Index: d.index, Item: d.item, Line: d.lineOf(path),
			Kind: d.typeMeta.Kind, Name: d.name, Field: path, Err: errors.New(prefix + fe.ErrorBody()),
		})
	}
	return errors.Join(out...)
}

// decodeStrict decodes JSON into the Go type of into, case-sensitively, and
// reports unknown and duplicate fields and wrongly typed values as field
// errors under path.
func decodeStrict(data []byte, into any, path *field.Path) field.ErrorList {
	strict, err := sigsjson.UnmarshalStrict(data, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	var errs field.ErrorList
	quoted := regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	for _, e := range strict {
		if m := quoted.FindStringSubmatch(e.Error()); m != nil {
			errs = append(errs, field.Forbidden(join(path, m[2]), m[1]+" field"))
			continue
		}
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, e.Error()))
	}
	if err != nil {
		typed := regexp.MustCompile(`^json: cannot unmarshal (\S+) into Go struct field [^.]*\.(\S+) of type (\S+)$`)
		if m := typed.FindStringSubmatch(err.Error()); m != nil {
			errs = append(errs, field.TypeInvalid(join(path, m[2]), field.OmitValueType{}, fmt.Sprintf("must be %s, not %s", m[3], m[1])))
		} else {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, err.Error()))
		}
	}
	return errs
}

// join appends a dotted sub-path to path.
func join(path *field.Path, sub string) *field.Path {
	if path == nil || path.String() == "" {
		return field.NewPath(sub)
	}
	return field.NewPath(path.String() + "." + sub)
}
