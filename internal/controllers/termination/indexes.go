package termination

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Field indexes the termination controllers list by. The pod index has the
// name of the API server's own field selector, so the same List works
// against the cache and against the API server.
const (
	// PodNodeNameIndex indexes Pods by spec.nodeName.
	PodNodeNameIndex = "spec.nodeName"
	// NodeProviderIDIndex indexes Nodes by spec.providerID.
	NodeProviderIDIndex = "spec.providerID"
	// NodeClaimProviderIDIndex indexes NodeClaims by status.providerID.
	NodeClaimProviderIDIndex = "status.providerID"
	// VolumeAttachmentNodeNameIndex indexes VolumeAttachments by spec.nodeName.
	VolumeAttachmentNodeNameIndex = "spec.nodeName"
)

// IndexFields registers the field indexes the termination controllers need.
// Call it once, before the manager starts; indexes are per kind and name, so
// other controllers may list by them too but must not register them again.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	indexes := []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&corev1.Pod{}, PodNodeNameIndex, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Pod).Spec.NodeName)
		}},
		{&corev1.Node{}, NodeProviderIDIndex, func(o client.Object) []string {
			return nonEmpty(o.(*corev1.Node).Spec.ProviderID)
		}},
		{&v1.NodeClaim{}, NodeClaimProviderIDIndex, func(o client.Object) []string {
			return nonEmpty(o.(*v1.NodeClaim).Status.ProviderID)
		}},
		{&storagev1.VolumeAttachment{}, VolumeAttachmentNodeNameIndex, func(o client.Object) []string {
			return nonEmpty(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		}},
	}
	for _, i := range indexes {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// nodeClaimsFor returns the NodeClaims whose instance has the provider ID.
func nodeClaimsFor(ctx context.Context, c client.Reader, providerID string) ([]*v1.NodeClaim, error) {
	if providerID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingFields{NodeClaimProviderIDIndex: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodeclaims with provider ID %q: %w", providerID, err)
	}
	out := make([]*v1.NodeClaim, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// nodesFor returns the Nodes of the instance with the provider ID.
func nodesFor(ctx context.Context, c client.Reader, providerID string) ([]*corev1.Node, error) {
	if providerID == "" {
		return nil, nil
	}
	list := &corev1.NodeList{}
	if err := c.List(ctx, list, client.MatchingFields{NodeProviderIDIndex: providerID}); err != nil {
		return nil, fmt.Errorf("listing nodes with provider ID %q: %w", providerID, err)
	}
	out := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// podsOn returns the pods bound to the node.
func podsOn(ctx context.Context, c client.Reader, nodeName string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := c.List(ctx, list, client.MatchingFields{PodNodeNameIndex: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on node %q: %w", nodeName, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}
