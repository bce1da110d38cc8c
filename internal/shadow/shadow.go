// Package shadow names what Dovetail's shadow mode shares between the
// controllers that publish decisions instead of acting on them: the
// per-NodePool annotation that makes one NodePool shadow-only in an
// otherwise live controller, and the event reasons every shadow decision
// is published with. A whole controller in shadow mode is
// `dovetail controller --dry-run` (operator.Options.DryRun).
package shadow

import (
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// AnnotationKey is the annotation that, set to "true" on a NodePool, makes
// that NodePool shadow-only: provisioning and disruption compute their decisions for it
// and publish them (events, dovetail_shadow_* metrics, logs), but launch
// no NodeClaim from it, and disrupt none of its nodes. Live NodePools are
// decided on without it, as if it did not launch.
const AnnotationKey = "dovetail.dev/shadow"

// Event reasons of shadow decisions. They differ from the live reasons
// (Nominated, DisruptionLaunching, ...) so that a shadow Dovetail running
// beside another autoscaler is never mistaken for it.
const (
	// ReasonLaunch is on a NodePool: a NodeClaim it would launch.
	ReasonLaunch = "ShadowLaunch"
	// ReasonNominated is on a pod: where it would be placed.
	ReasonNominated = "ShadowNominated"
	// ReasonFailedScheduling is on a pod: why it would be placed nowhere.
	ReasonFailedScheduling = "ShadowFailedScheduling"
	// ReasonDisrupt is on a Node and its NodeClaim: a disruption it would
	// carry out, with the command's sentence.
	ReasonDisrupt = "ShadowDisrupt"
)

// IsShadow reports a NodePool annotated shadow-only.
func IsShadow(np *v1.NodePool) bool {
	return np != nil && np.Annotations[AnnotationKey] == "true"
}
