package termination

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
)

// nodeClaimsFor returns the NodeClaims whose instance has the provider ID.
func nodeClaimsFor(ctx context.Context, c client.Reader, providerID string) ([]*v1.NodeClaim, error) {
	if providerID == "" {
		return nil, nil
	}
	list := &v1.NodeClaimList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.NodeClaimProviderID: providerID}); err != nil {
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
	if err := c.List(ctx, list, client.MatchingFields{indexes.NodeProviderID: providerID}); err != nil {
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
	if err := c.List(ctx, list, client.MatchingFields{indexes.PodNodeName: nodeName}); err != nil {
		return nil, fmt.Errorf("listing pods on node %q: %w", nodeName, err)
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}
