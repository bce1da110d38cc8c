package disrupter

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// input gathers the view of the cluster a decision is taken on: the
// machines of the model, every NodePool with its instance types, PDBs,
// pending pods, volumes and namespaces (from the cache), the commands in
// progress and the repairs the node.health controller asks for.
func (c *Controller) input(ctx context.Context) (disruption.Input, error) {
	in := disruption.Input{
		Now:          c.clock.Now(),
		Nodes:        c.cluster.Nodes(),
		DaemonSets:   c.cluster.DaemonSets(),
		Disrupting:   c.queue.Disrupting(),
		Replacements: c.queue.Replacements(),
	}
	if c.opts.Repairs != nil {
		requests := c.opts.Repairs.Snapshot()
		in.Repairs = make(map[string]string, len(requests))
		for name, req := range requests {
			in.Repairs[name] = req.Why()
		}
	}
	pools := &v1.NodePoolList{}
	pdbs := &policyv1.PodDisruptionBudgetList{}
	pods := &corev1.PodList{}
	pvcs := &corev1.PersistentVolumeClaimList{}
	pvs := &corev1.PersistentVolumeList{}
	classes := &storagev1.StorageClassList{}
	namespaces := &corev1.NamespaceList{}
	for _, l := range []client.ObjectList{pools, pdbs, pvcs, pvs, classes, namespaces} {
		if err := c.kubeClient.List(ctx, l); err != nil {
			return in, fmt.Errorf("listing %T: %w", l, err)
		}
	}
	// Only the pods waiting for capacity, read in place and then copied:
	// listing every pod of the cache (a struct copy of each, even without a
	// deep copy) to keep a few was the largest allocation of a pass.
	if err := c.kubeClient.List(ctx, pods, client.MatchingFields{indexes.PodProvisionable: indexes.ProvisionableValue}, client.UnsafeDisableDeepCopy); err != nil {
		return in, fmt.Errorf("listing pending pods: %w", err)
	}
	// A pool whose instance types cannot be read still owns nodes (their
	// budgets count); it gets no types, so it launches nothing and its
	// nodes are not consolidated.
	var errs []error
	for i := range pools.Items {
		np := &pools.Items[i]
		types, err := c.cloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("getting instance types of nodepool %s: %w", np.Name, err))
			log.FromContext(ctx).Error(err, "Reading instance types", "NodePool", klog.KObj(np))
		}
		in.NodePools = append(in.NodePools, simulator.NodePool{NodePool: np, InstanceTypes: types})
	}
	for i := range pdbs.Items {
		in.PDBs = append(in.PDBs, &pdbs.Items[i])
	}
	for i := range pods.Items {
		in.PendingPods = append(in.PendingPods, pods.Items[i].DeepCopy())
	}
	in.Refused = c.cluster.Refused(in.PendingPods)
	for i := range pvcs.Items {
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, &pvcs.Items[i])
	}
	for i := range pvs.Items {
		in.PersistentVolumes = append(in.PersistentVolumes, &pvs.Items[i])
	}
	for i := range classes.Items {
		in.StorageClasses = append(in.StorageClasses, &classes.Items[i])
	}
	for i := range namespaces.Items {
		in.Namespaces = append(in.Namespaces, &namespaces.Items[i])
	}
	if len(errs) == len(pools.Items) && len(errs) > 0 {
		return in, errors.Join(errs...)
	}
	return in, nil
}
