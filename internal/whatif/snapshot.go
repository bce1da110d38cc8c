package whatif

import (
	"context"
	"fmt"
	"io"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// FromCluster lists the objects the decisions need. NodeClass kinds and
// NodeOverlays whose CRD is not installed are skipped (the controllers then
// apply no overlay either); terminal pods are left out.
func FromCluster(ctx context.Context, c client.Reader) (*Objects, error) {
	var (
		nodes      corev1.NodeList
		claims     v1.NodeClaimList
		pools      v1.NodePoolList
		pods       corev1.PodList
		daemons    appsv1.DaemonSetList
		deploys    appsv1.DeploymentList
		pdbs       policyv1.PodDisruptionBudgetList
		pvcs       corev1.PersistentVolumeClaimList
		pvs        corev1.PersistentVolumeList
		classes    storagev1.StorageClassList
		namespaces corev1.NamespaceList
	)
	for _, l := range []client.ObjectList{&nodes, &claims, &pools, &pods, &daemons, &deploys, &pdbs, &pvcs, &pvs, &classes, &namespaces} {
		if err := c.List(ctx, l); err != nil {
			return nil, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	o := &Objects{}
	for i := range nodes.Items {
		o.Nodes = append(o.Nodes, &nodes.Items[i])
	}
	for i := range claims.Items {
		o.NodeClaims = append(o.NodeClaims, &claims.Items[i])
	}
	for i := range pools.Items {
		o.NodePools = append(o.NodePools, &pools.Items[i])
	}
	for i := range pods.Items {
		if !podutil.IsTerminal(&pods.Items[i]) {
			o.Pods = append(o.Pods, &pods.Items[i])
		}
	}
	for i := range daemons.Items {
		o.DaemonSets = append(o.DaemonSets, &daemons.Items[i])
	}
	for i := range deploys.Items {
		o.Deployments = append(o.Deployments, &deploys.Items[i])
	}
	for i := range pdbs.Items {
		o.PDBs = append(o.PDBs, &pdbs.Items[i])
	}
	for i := range pvcs.Items {
		o.PersistentVolumeClaims = append(o.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		o.PersistentVolumes = append(o.PersistentVolumes, &pvs.Items[i])
	}
	for i := range classes.Items {
		o.StorageClasses = append(o.StorageClasses, &classes.Items[i])
	}
	for i := range namespaces.Items {
		o.Namespaces = append(o.Namespaces, &namespaces.Items[i])
	}
	for _, gvk := range nodeClassKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			o.NodeClasses = append(o.NodeClasses, &list.Items[i])
		}
	}
	overlays := &v1alpha1.NodeOverlayList{}
	if err := c.List(ctx, overlays); err != nil {
		// A cluster with Karpenter's CRDs before v1.7 serves no NodeOverlay.
		if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("listing NodeOverlays: %w", err)
		}
	}
	for i := range overlays.Items {
		o.NodeOverlays = append(o.NodeOverlays, &overlays.Items[i])
	}
	return o, nil
}

// Write writes the objects as a multi-document YAML stream that Load
// reads back, without managed fields.
func Write(w io.Writer, o *Objects) error {
	var objs []client.Object
	add := func(gvk schema.GroupVersionKind, obj client.Object) {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		obj.SetManagedFields(nil)
		objs = append(objs, obj)
	}
	core := func(kind string) schema.GroupVersionKind { return corev1.SchemeGroupVersion.WithKind(kind) }
	for _, x := range o.Namespaces {
		add(core("Namespace"), x)
	}
	for _, x := range o.StorageClasses {
		add(storagev1.SchemeGroupVersion.WithKind("StorageClass"), x)
	}
	for _, x := range o.NodeClasses {
		add(x.GroupVersionKind(), x)
	}
	for _, x := range o.NodePools {
		add(v1.SchemeGroupVersion.WithKind("NodePool"), x)
	}
	for _, x := range o.NodeOverlays {
		add(v1alpha1.SchemeGroupVersion.WithKind("NodeOverlay"), x)
	}
	for _, x := range o.NodeClaims {
		add(v1.SchemeGroupVersion.WithKind("NodeClaim"), x)
	}
	for _, x := range o.Nodes {
		add(core("Node"), x)
	}
	for _, x := range o.DaemonSets {
		add(appsv1.SchemeGroupVersion.WithKind("DaemonSet"), x)
	}
	for _, x := range o.Deployments {
		add(appsv1.SchemeGroupVersion.WithKind("Deployment"), x)
	}
	for _, x := range o.StatefulSets {
		add(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), x)
	}
	for _, x := range o.ReplicaSets {
		add(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), x)
	}
	for _, x := range o.PDBs {
		add(policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), x)
	}
	for _, x := range o.PersistentVolumes {
		add(core("PersistentVolume"), x)
	}
	for _, x := range o.PersistentVolumeClaims {
		add(core("PersistentVolumeClaim"), x)
	}
	for _, x := range o.Pods {
		add(core("Pod"), x)
	}
	for _, obj := range objs {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
		if _, err := fmt.Fprintf(w, "---\n%s", data); err != nil {
			return fmt.Errorf("writing snapshot: %w", err)
		}
	}
	return nil
}
