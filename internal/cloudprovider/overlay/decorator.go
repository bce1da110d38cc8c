package overlay

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// CloudProvider decorates another provider with the cluster's NodeOverlays;
// see the package documentation. Build it with Decorate.
type CloudProvider struct {
	cloudprovider.CloudProvider
	reader client.Reader
	clock  clock.PassiveClock

	mu sync.Mutex
	// absentUntil: the NodeOverlay CRD was found not installed; it is not
	// looked up again (each look-up may cost a discovery request) before.
	absentUntil time.Time
}

// absentRecheck is how long a missing NodeOverlay CRD is taken as missing.
const absentRecheck = time.Minute

var _ cloudprovider.CloudProvider = (*CloudProvider)(nil)

// Decorate returns inner with NodeOverlays, read through reader (normally
// the manager's cached client), applied to its instance types and
// launches. A nil reader reads no overlays. Without the NodeOverlay CRD
// there are none; clk paces the checks for it.
func Decorate(inner cloudprovider.CloudProvider, reader client.Reader, clk clock.PassiveClock) *CloudProvider {
	return &CloudProvider{CloudProvider: inner, reader: reader, clock: clk}
}

// Unwrap returns the decorated provider, whose instance types carry no overlay.
func (c *CloudProvider) Unwrap() cloudprovider.CloudProvider { return c.CloudProvider }

// GetInstanceTypes returns the provider's instance types for the NodePool
// with the NodeOverlays applied.
func (c *CloudProvider) GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	its, err := c.CloudProvider.GetInstanceTypes(ctx, nodePool)
	if err != nil {
		return nil, err
	}
	overlays, err := c.overlays(ctx)
	if err != nil || len(overlays) == 0 {
		return its, err
	}
	applied := Evaluate([]Pool{{NodePool: nodePool, InstanceTypes: its}}, overlays).Applied
	return Apply(nodePool, its, applied).InstanceTypes, nil
}

// Create launches the claim with the NodeOverlays of its NodePool handed to
// the provider (see InstanceTypes). A claim one of whose instance types had
// a price overlaid is annotated karpenter.sh/price-overlay-applied (and one
// whose types had capacity added karpenter.sh/capacity-overlay-applied)
// before the provider sees it, so that the provider launches by the
// overlaid order; the annotations are on the returned claim too.
func (c *CloudProvider) Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error) {
	pool, its, applied, err := c.launchOverlays(ctx, nodeClaim)
	if err != nil {
		return nil, err
	}
	if len(applied) == 0 {
		return c.CloudProvider.Create(ctx, nodeClaim)
	}
	ctx = withApplier(ctx, func(its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
		return Apply(pool, its, applied).InstanceTypes
	})
	annotations := launchAnnotations(nodeClaim, Apply(pool, its, applied))
	if len(annotations) > 0 {
		nodeClaim = nodeClaim.DeepCopy()
		if nodeClaim.Annotations == nil {
			nodeClaim.Annotations = map[string]string{}
		}
		maps.Copy(nodeClaim.Annotations, annotations)
	}
	created, err := c.CloudProvider.Create(ctx, nodeClaim)
	if err != nil || len(annotations) == 0 {
		return created, err
	}
	if created.Annotations == nil {
		created.Annotations = map[string]string{}
	}
	maps.Copy(created.Annotations, annotations)
	return created, nil
}

// launchOverlays returns the claim's NodePool, the provider's instance
// types for it and the overlays that apply to them; no overlays for a claim
// of no (existing) NodePool.
func (c *CloudProvider) launchOverlays(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodePool, []*cloudprovider.InstanceType, []Overlay, error) {
	name, ok := nodeClaim.Labels[v1.NodePoolLabelKey]
	if !ok || c.reader == nil {
		return nil, nil, nil, nil
	}
	overlays, err := c.overlays(ctx)
	if err != nil || len(overlays) == 0 {
		return nil, nil, nil, err
	}
	pool := &v1.NodePool{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, fmt.Errorf("getting nodepool %s of nodeclaim %s to apply nodeoverlays: %w", name, nodeClaim.Name, err)
	}
	its, err := c.CloudProvider.GetInstanceTypes(ctx, pool)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing instance types of nodepool %s to apply nodeoverlays: %w", name, err)
	}
	return pool, its, Evaluate([]Pool{{NodePool: pool, InstanceTypes: its}}, overlays).Applied, nil
}

// launchAnnotations are the overlay annotations of a claim: for the
// instance types it lists (all, when it lists none) that were overlaid.
func launchAnnotations(nodeClaim *v1.NodeClaim, res Result) map[string]string {
	var listed []string
	for _, r := range nodeClaim.Spec.Requirements {
		if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
			listed = r.Values
		}
	}
	overlaid := func(set map[string]bool) bool {
		if listed == nil {
			return len(set) > 0
		}
		for _, name := range listed {
			if set[name] {
				return true
			}
		}
		return false
	}
	out := map[string]string{}
	if overlaid(res.PriceOverlaid) {
		out[v1alpha1.PriceOverlayAppliedAnnotationKey] = "true"
	}
	if overlaid(res.CapacityOverlaid) {
		out[v1alpha1.CapacityOverlayAppliedAnnotationKey] = "true"
	}
	return out
}

// overlays returns the cluster's NodeOverlays that may apply: parsed, not
// being deleted, and not marked ValidationSucceeded=False for their
// current generation by the nodeoverlay controller. None when the
// NodeOverlay CRD is not installed.
func (c *CloudProvider) overlays(ctx context.Context) ([]Overlay, error) {
	if c.reader == nil {
		return nil, nil
	}
	c.mu.Lock()
	absent := c.clock.Now().Before(c.absentUntil)
	c.mu.Unlock()
	if absent {
		return nil, nil
	}
	list := &v1alpha1.NodeOverlayList{}
	if err := c.reader.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			c.mu.Lock()
			c.absentUntil = c.clock.Now().Add(absentRecheck)
			c.mu.Unlock()
			log.FromContext(ctx).V(1).Info("The NodeOverlay CRD is not installed; no overlays apply", "recheckAfter", absentRecheck.String())
			return nil, nil
		}
		return nil, fmt.Errorf("listing nodeoverlays: %w", err)
	}
	out := make([]Overlay, 0, len(list.Items))
	for i := range list.Items {
		no := &list.Items[i]
		if Skipped(no) {
			continue
		}
		o, err := Parse(no)
		if err != nil {
			// The controller reports it on the overlay's status.
			log.FromContext(ctx).V(1).Info("Ignoring invalid NodeOverlay", "NodeOverlay", no.Name, "error", err.Error())
			continue
		}
		out = append(out, o)
	}
	return out, nil
}

// Skipped reports whether a NodeOverlay is left out before it is parsed:
// it is being deleted, or the nodeoverlay controller marked it
// ValidationSucceeded=False for its current generation. The decorator and
// the transparency commands (dovetail simulate and explain) both skip such
// overlays, so that they agree on what applies.
func Skipped(no *v1alpha1.NodeOverlay) bool {
	if no.DeletionTimestamp != nil {
		return true
	}
	cond := meta.FindStatusCondition(no.Status.Conditions, v1alpha1.ConditionTypeValidationSucceeded)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.ObservedGeneration == no.Generation
}
