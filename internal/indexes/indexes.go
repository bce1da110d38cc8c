// Package indexes registers the cache field indexes that several controllers
// query: pods and VolumeAttachments by node, pods by nominated node, the
// pods waiting for capacity, Nodes and NodeClaims by provider ID,
// NodeClaims by NodePool. Registering them in one place, once, avoids
// conflicting registrations.
package indexes

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// Field names of the indexes.
const (
	PodNodeName = "spec.nodeName"
	// PodNominatedNodeName indexes pods by status.nominatedNodeName: the
	// kube-scheduler keeps room for them on that node.
	PodNominatedNodeName = "status.nominatedNodeName"
	// PodProvisionable holds the pods that wait for capacity
	// (podutil.IsProvisionable), under the value ProvisionableValue: a
	// disruption pass needs only those, and copying every pod of the
	// cache into a list for them was 11 MB per pass at 10,000 pods.
	PodProvisionable      = "dovetail.sh/provisionable"
	NodeProviderID        = "spec.providerID"
	NodeClaimProviderID   = "status.providerID"
	NodeClaimNodePoolName = "metadata.labels.nodepool"
	// VolumeAttachmentNodeName is the name of the API server's own field
	// selector, so the same List works against the cache and the API server.
	VolumeAttachmentNodeName = "spec.nodeName"
)

// ProvisionableValue is the one value of the PodProvisionable index.
const ProvisionableValue = "true"

// Setup registers every index with the manager's field indexer.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	for _, idx := range []struct {
		obj     client.Object
		field   string
		extract client.IndexerFunc
	}{
		{&corev1.Pod{}, PodNodeName, func(o client.Object) []string { return nonEmpty(o.(*corev1.Pod).Spec.NodeName) }},
		{&corev1.Pod{}, PodNominatedNodeName, func(o client.Object) []string { return nonEmpty(o.(*corev1.Pod).Status.NominatedNodeName) }},
		{&corev1.Pod{}, PodProvisionable, func(o client.Object) []string {
			if podutil.IsProvisionable(o.(*corev1.Pod)) {
				return []string{ProvisionableValue}
			}
			return nil
		}},
		{&corev1.Node{}, NodeProviderID, func(o client.Object) []string { return nonEmpty(o.(*corev1.Node).Spec.ProviderID) }},
		{&v1.NodeClaim{}, NodeClaimProviderID, func(o client.Object) []string { return nonEmpty(o.(*v1.NodeClaim).Status.ProviderID) }},
		{&v1.NodeClaim{}, NodeClaimNodePoolName, func(o client.Object) []string { return nonEmpty(o.GetLabels()[v1.NodePoolLabelKey]) }},
		{&storagev1.VolumeAttachment{}, VolumeAttachmentNodeName, func(o client.Object) []string {
			return nonEmpty(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		}},
	} {
		if err := indexer.IndexField(ctx, idx.obj, idx.field, idx.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", idx.obj, idx.field, err)
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
