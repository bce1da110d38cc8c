package demo

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
)

// planFollowed is where the scale-out's pods bound against where
// provisioning planned them, read from what a user can read too: each
// pod's Nominated event, the NodeClaims' nodes and the pods' nodes.
type planFollowed struct {
	// onPlan and offPlan count the bound pods planned onto a NodeClaim
	// that bound to its node, or elsewhere; unplanned the bound pods with
	// no Nominated event.
	onPlan, offPlan, unplanned int
	// missed counts the nodes that run none of the pods although pods
	// were planned onto them: the kube-scheduler bound those elsewhere.
	// unused counts the nodes that run none of the pods and that no pod
	// was planned onto: a launch nothing asked for.
	missed, unused int
}

// followPlan classifies the bound pods and the nodes without pods. A pod
// planned more than once (a new plan after its hand-off was refused, or a
// second plan for a pod already planned) is judged by its latest plan,
// and a node left empty that only such pods were planned onto is a launch
// no pod needed, not a miss; a pod counts against a NodeClaim only once
// that claim has a node.
func followPlan(pods []corev1.Pod, events []corev1.Event, claims []v1.NodeClaim, nodes []corev1.Node) planFollowed {
	nodeOf := map[string]string{}
	for _, nc := range claims {
		if nc.Status.NodeName != "" {
			nodeOf[nc.Name] = nc.Status.NodeName
		}
	}
	// The latest Nominated event of each pod, by UID.
	type plan struct {
		claim string
		at    int64
	}
	latest := map[string]plan{}
	claimsOf := map[string]map[string]bool{}
	for _, e := range events {
		claim, ok := provisioning.NominatedClaim(e.Message)
		if e.Reason != provisioning.NominatedReason || !ok || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		at := e.LastTimestamp.UnixNano()
		if e.EventTime.UnixNano() > at {
			at = e.EventTime.UnixNano()
		}
		uid := string(e.InvolvedObject.UID)
		if claimsOf[uid] == nil {
			claimsOf[uid] = map[string]bool{}
		}
		claimsOf[uid][claim] = true
		if p, seen := latest[uid]; !seen || at >= p.at {
			latest[uid] = plan{claim: claim, at: at}
		}
	}
	var f planFollowed
	running := map[string]bool{}
	plannedOnto := map[string]bool{}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
			continue
		}
		running[pod.Spec.NodeName] = true
		p, ok := latest[string(pod.UID)]
		node := nodeOf[p.claim]
		switch {
		case !ok || node == "":
			f.unplanned++
		case node == pod.Spec.NodeName:
			f.onPlan++
		default:
			f.offPlan++
		}
		// A node counts as a hand-off miss only for a pod planned once:
		// a pod planned again (onto a second NodeClaim) is the case the
		// demo must catch, whichever of the two nodes it bound to.
		if node != "" && len(claimsOf[string(pod.UID)]) == 1 {
			plannedOnto[node] = true
		}
	}
	for _, n := range nodes {
		switch {
		case running[n.Name]:
		case plannedOnto[n.Name]:
			f.missed++
		default:
			f.unused++
		}
	}
	return f
}

// followPlan reads the demo's pods, their events, the NodeClaims and the
// nodes, and classifies them (followPlan).
func (s *story) followPlan(ctx context.Context, nodes []corev1.Node) (planFollowed, error) {
	pods := &corev1.PodList{}
	if err := s.cluster.Client.List(ctx, pods, client.InNamespace(Namespace)); err != nil {
		return planFollowed{}, fmt.Errorf("listing the demo's pods: %w", err)
	}
	events := &corev1.EventList{}
	if err := s.cluster.Client.List(ctx, events, client.InNamespace(Namespace)); err != nil {
		return planFollowed{}, fmt.Errorf("listing the demo's events: %w", err)
	}
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return planFollowed{}, fmt.Errorf("listing NodeClaims: %w", err)
	}
	return followPlan(pods.Items, events.Items, claims.Items, nodes), nil
}
