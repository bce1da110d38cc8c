package view

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Source holds informers on Nodes, NodeClaims, NodePools, Pods and
// PodDisruptionBudgets and
// says when any of them changes: one watch per kind, no polling.
type Source struct {
	cache   cache.Cache
	changes chan struct{}
}

// StartSource checks that the cluster answers (and serves NodePools)
// within timeout, starts the informers and waits for their first lists.
// They stop with ctx.
func StartSource(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, timeout time.Duration) (*Source, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client for %s: %w", cfg.Host, err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.List(pctx, &v1.NodePoolList{}, client.Limit(1)); err != nil {
		return nil, fmt.Errorf("reading NodePools from %s: %w", cfg.Host, err)
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
	if err != nil {
		return nil, fmt.Errorf("building informers for %s: %w", cfg.Host, err)
	}
	s := &Source{cache: ca, changes: make(chan struct{}, 1)}
	handler := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.notify() },
		UpdateFunc: func(any, any) { s.notify() },
		DeleteFunc: func(any) { s.notify() },
	}
	for _, obj := range []client.Object{&corev1.Node{}, &v1.NodeClaim{}, &v1.NodePool{}, &corev1.Pod{}, &policyv1.PodDisruptionBudget{}} {
		inf, err := ca.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	go func() { _ = ca.Start(ctx) }()
	sctx, cancelSync := context.WithTimeout(ctx, timeout)
	defer cancelSync()
	if !ca.WaitForCacheSync(sctx) {
		return nil, fmt.Errorf("the informers of %s did not sync within %s", cfg.Host, timeout)
	}
	return s, nil
}

// notify records a change; changes that arrive before the view reads the
// last one coalesce into one.
func (s *Source) notify() {
	select {
	case s.changes <- struct{}{}:
	default:
	}
}

// Objects lists the objects the informers hold.
func (s *Source) Objects(ctx context.Context) (Objects, error) {
	var out Objects
	nodes, claims, pools, pods, pdbs := &corev1.NodeList{}, &v1.NodeClaimList{}, &v1.NodePoolList{}, &corev1.PodList{}, &policyv1.PodDisruptionBudgetList{}
	for _, l := range []client.ObjectList{nodes, claims, pools, pods, pdbs} {
		if err := s.cache.List(ctx, l); err != nil {
			return out, fmt.Errorf("listing %T from the informers: %w", l, err)
		}
	}
	for i := range nodes.Items {
		out.Nodes = append(out.Nodes, &nodes.Items[i])
	}
	for i := range claims.Items {
		out.NodeClaims = append(out.NodeClaims, &claims.Items[i])
	}
	for i := range pools.Items {
		out.NodePools = append(out.NodePools, &pools.Items[i])
	}
	for i := range pods.Items {
		out.Pods = append(out.Pods, &pods.Items[i])
	}
	for i := range pdbs.Items {
		out.PDBs = append(out.PDBs, &pdbs.Items[i])
	}
	return out, nil
}

// Next waits for a change (or ctx's end) and returns the objects then, as
// an ObjectsMsg: a bubbletea command that Model.Updates can be.
func (s *Source) Next(ctx context.Context) ObjectsMsg {
	select {
	case <-ctx.Done():
		return ObjectsMsg{Err: ctx.Err()}
	case <-s.changes:
	}
	objs, err := s.Objects(ctx)
	return ObjectsMsg{Objects: objs, Err: err}
}
