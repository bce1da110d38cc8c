package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// ConvertJSON converts one JSON-encoded NodePool, NodeClaim or EC2NodeClass,
// in either served version, to apiVersion and returns it JSON-encoded. An
// object already at apiVersion is returned unchanged. This is the entry point
// for a conversion webhook: call it once per object of a ConversionReview with
// the review's desiredAPIVersion.
//
// Decoding is strict: a field the Go types do not know is an error rather than
// silently dropped, because the webhook's answer replaces the object.
func (c *Converter) ConvertJSON(ctx context.Context, object []byte, apiVersion string) ([]byte, error) {
	typeMeta := metav1.TypeMeta{}
	if err := json.Unmarshal(object, &typeMeta); err != nil {
		return nil, fmt.Errorf("reading apiVersion and kind: %w", err)
	}
	if typeMeta.APIVersion == apiVersion {
		return object, nil
	}
	obj, err := NewObject(typeMeta.GroupVersionKind())
	if err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(object, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", typeMeta.Kind, err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("decoding %s: %w", typeMeta.Kind, errors.Join(strict...))
	}
	converted, err := c.Convert(ctx, obj, apiVersion)
	if err != nil {
		return nil, err
	}
	return json.Marshal(converted)
}

// NewObject returns an empty typed object for one of the kinds this package
// converts (NodePool, NodeClaim, EC2NodeClass in v1 or v1beta1).
func NewObject(gvk schema.GroupVersionKind) (runtime.Object, error) {
	switch gvk {
	case v1.SchemeGroupVersion.WithKind("NodePool"):
		return &v1.NodePool{}, nil
	case v1beta1.SchemeGroupVersion.WithKind("NodePool"):
		return &v1beta1.NodePool{}, nil
	case v1.SchemeGroupVersion.WithKind("NodeClaim"):
		return &v1.NodeClaim{}, nil
	case v1beta1.SchemeGroupVersion.WithKind("NodeClaim"):
		return &v1beta1.NodeClaim{}, nil
	case awsv1.SchemeGroupVersion.WithKind("EC2NodeClass"):
		return &awsv1.EC2NodeClass{}, nil
	case awsv1beta1.SchemeGroupVersion.WithKind("EC2NodeClass"):
		return &awsv1beta1.EC2NodeClass{}, nil
	}
	return nil, fmt.Errorf("cannot convert %s: not a NodePool, NodeClaim or EC2NodeClass of a served version", gvk)
}

// Convert converts a typed NodePool, NodeClaim or EC2NodeClass to apiVersion,
// which must be v1 or v1beta1 of the object's group. The input is never
// modified; an object already at apiVersion comes back as a deep copy.
func (c *Converter) Convert(ctx context.Context, obj runtime.Object, apiVersion string) (runtime.Object, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("parsing target apiVersion: %w", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	switch in := obj.(type) {
	case *v1.NodePool:
		return convertTo(gv, v1.SchemeGroupVersion, v1beta1.SchemeGroupVersion, "NodePool", in.DeepCopy, func() (runtime.Object, error) { return object(c.NodePoolToV1beta1(in)) })
	case *v1beta1.NodePool:
		return convertTo(gv, v1beta1.SchemeGroupVersion, v1.SchemeGroupVersion, "NodePool", in.DeepCopy, func() (runtime.Object, error) { return object(c.NodePoolToV1(in)) })
	case *v1.NodeClaim:
		return convertTo(gv, v1.SchemeGroupVersion, v1beta1.SchemeGroupVersion, "NodeClaim", in.DeepCopy, func() (runtime.Object, error) { return object(c.NodeClaimToV1beta1(ctx, in)) })
	case *v1beta1.NodeClaim:
		return convertTo(gv, v1beta1.SchemeGroupVersion, v1.SchemeGroupVersion, "NodeClaim", in.DeepCopy, func() (runtime.Object, error) { return object(c.NodeClaimToV1(ctx, in)) })
	case *awsv1.EC2NodeClass:
		return convertTo(gv, awsv1.SchemeGroupVersion, awsv1beta1.SchemeGroupVersion, "EC2NodeClass", in.DeepCopy, func() (runtime.Object, error) { return object(c.EC2NodeClassToV1beta1(in)) })
	case *awsv1beta1.EC2NodeClass:
		return convertTo(gv, awsv1beta1.SchemeGroupVersion, awsv1.SchemeGroupVersion, "EC2NodeClass", in.DeepCopy, func() (runtime.Object, error) { return object(c.EC2NodeClassToV1(in)) })
	}
	return nil, fmt.Errorf("cannot convert %T (%s): not a NodePool, NodeClaim or EC2NodeClass", obj, gvk)
}

// object returns o as a runtime.Object, or a nil interface on error.
func object[T runtime.Object](o T, err error) (runtime.Object, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

// convertTo returns a copy when target is the object's own version (from),
// calls convert when it is the other version (to), and fails otherwise.
func convertTo[T runtime.Object](target, from, to schema.GroupVersion, kind string, deepCopy func() T, convert func() (runtime.Object, error)) (runtime.Object, error) {
	switch target {
	case from:
		out := deepCopy()
		out.GetObjectKind().SetGroupVersionKind(from.WithKind(kind))
		return out, nil
	case to:
		return convert()
	}
	return nil, fmt.Errorf("cannot convert %s %s to %s: served versions are %s and %s", from, kind, target, from, to)
}
