package conversion

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// DefaultExpireAfter is the v1 CRD default of expireAfter, given to a NodeClaim
// converted from v1beta1 when its NodePool cannot be found.
const DefaultExpireAfter = "720h"

// NodePoolGetter finds the v1 NodePool that owns a NodeClaim, by name. A
// NodeClaim's expireAfter is a NodePool setting in v1beta1 and a NodeClaim
// field in v1, so converting a NodeClaim needs its NodePool. A missing
// NodePool is reported as (nil, nil) or as an error for which
// apierrors.IsNotFound is true; any other error fails the conversion.
type NodePoolGetter interface {
	GetNodePool(ctx context.Context, name string) (*v1.NodePool, error)
}

// NodePoolGetterFunc adapts a function to NodePoolGetter; the webhook wraps a
// client Get in one.
type NodePoolGetterFunc func(ctx context.Context, name string) (*v1.NodePool, error)

// GetNodePool calls f.
func (f NodePoolGetterFunc) GetNodePool(ctx context.Context, name string) (*v1.NodePool, error) {
	return f(ctx, name)
}

// StaticNodePools is a NodePoolGetter over a fixed set of NodePools keyed by
// name; the offline converter uses the NodePools of its input.
type StaticNodePools map[string]*v1.NodePool

// GetNodePool returns the named NodePool, or nil when there is none.
func (s StaticNodePools) GetNodePool(_ context.Context, name string) (*v1.NodePool, error) {
	return s[name], nil
}

// Converter converts objects between v1beta1 and v1. Its zero value is ready
// to use: references default to EC2NodeClass and no NodePool is ever found.
type Converter struct {
	// DefaultNodeClass is the NodeClass a v1beta1 nodeClassRef refers to when
	// it names no kind or apiVersion; EC2NodeClass (karpenter.k8s.aws) if empty.
	// Karpenter takes it from the cloud provider in the same way.
	DefaultNodeClass schema.GroupKind
	// NodePools looks up the owning NodePool of a NodeClaim. Nil means none is
	// ever found.
	NodePools NodePoolGetter
}

// defaultNodeClass returns the NodeClass an unqualified v1beta1 reference means.
func (c *Converter) defaultNodeClass() schema.GroupKind {
	if c.DefaultNodeClass.Kind == "" {
		return schema.GroupKind{Group: awsv1.Group, Kind: "EC2NodeClass"}
	}
	return c.DefaultNodeClass
}

// nodeClaimExpireAfter is the expireAfter a v1beta1 NodeClaim gets in v1: the
// template expireAfter of the NodePool named by its karpenter.sh/nodepool
// label, or the CRD default when there is no such label or NodePool.
func (c *Converter) nodeClaimExpireAfter(ctx context.Context, labels map[string]string) (v1.NillableDuration, error) {
	name, ok := labels[v1.NodePoolLabelKey]
	if ok && c.NodePools != nil {
		pool, err := c.NodePools.GetNodePool(ctx, name)
		if err != nil && !apierrors.IsNotFound(err) {
			return v1.NillableDuration{}, fmt.Errorf("getting NodePool %q: %w", name, err)
		}
		if err == nil && pool != nil {
			return pool.Spec.Template.Spec.ExpireAfter, nil
		}
	}
	return v1.MustParseNillableDuration(DefaultExpireAfter), nil
}

// typeMeta returns the TypeMeta of kind in gv.
func typeMeta(gv schema.GroupVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gv.String(), Kind: kind}
}
