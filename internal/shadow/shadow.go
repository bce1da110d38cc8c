// Package shadow names what Dovetail's shadow mode shares between the
// controllers that publish decisions instead of acting on them: the
// per-NodePool annotation that makes one NodePool shadow-only in an
// otherwise live controller, and the event reasons every shadow decision
// is published with. A whole controller in shadow mode is
// `dovetail controller --dry-run` (operator.Options.DryRun).
package shadow

import (
	"fmt"

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

// IsShadow reports a NodePool annotated shadow-only. It fails safe: any
// value but "false" makes the NodePool shadow-only, so that a mistyped
// value ("yes", "True ") never lets Dovetail act on a NodePool its owner
// meant to rehearse; InvalidAnnotation tells them.
func IsShadow(np *v1.NodePool) bool {
	if np == nil {
		return false
	}
	value, ok := np.Annotations[AnnotationKey]
	return ok && value != "false"
}

// InvalidAnnotation reports a NodePool whose shadow annotation is neither
// "true" nor "false" (it is treated as "true"), with a message saying so.
func InvalidAnnotation(np *v1.NodePool) (string, bool) {
	value, ok := np.Annotations[AnnotationKey]
	if !ok || value == "true" || value == "false" {
		return "", false
	}
	return fmt.Sprintf("NodePool annotation %s=%q is not \"true\" or \"false\"; the NodePool is treated as shadow-only (nothing is launched from it or disrupted in it) until it is fixed",
		AnnotationKey, value), true
}

// ReasonInvalidAnnotation is on a NodePool whose shadow annotation has a
// value other than "true" or "false".
const ReasonInvalidAnnotation = "InvalidShadowAnnotation"
