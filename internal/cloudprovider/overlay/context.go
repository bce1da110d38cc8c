package overlay

import (
	"context"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// applierKey keys the overlays of a Create in its context.
type applierKey struct{}

// withApplier returns ctx carrying apply, which overlays the instance types
// of the NodePool being launched for.
func withApplier(ctx context.Context, apply func([]*cloudprovider.InstanceType) []*cloudprovider.InstanceType) context.Context {
	return context.WithValue(ctx, applierKey{}, apply)
}

// InstanceTypes returns its with the NodeOverlays of the launch applied,
// when ctx is the context of a Create the decorator made, and its itself
// otherwise. A provider's Create calls it on the instance types it lists,
// so that it launches by the overlaid prices and reports the overlaid
// capacity on the NodeClaim (and, on kwok, the Node). The order of its is
// kept and its elements are not modified.
func InstanceTypes(ctx context.Context, its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	apply, ok := ctx.Value(applierKey{}).(func([]*cloudprovider.InstanceType) []*cloudprovider.InstanceType)
	if !ok || apply == nil {
		return its
	}
	return apply(its)
}
