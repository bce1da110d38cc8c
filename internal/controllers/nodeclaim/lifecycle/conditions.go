package lifecycle

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// setCondition sets a condition, stamping the transition time from now
// (the injected clock) when the status changes.
func setCondition(nc *v1.NodeClaim, now metav1.Time, conditionType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{
		Type: conditionType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: nc.Generation, LastTransitionTime: now,
	})
}

func isTrue(nc *v1.NodeClaim, conditionType string) bool {
	return meta.IsStatusConditionTrue(nc.Status.Conditions, conditionType)
}

// setReady derives the root Ready condition from Launched, Registered and Initialized.
func setReady(nc *v1.NodeClaim, now metav1.Time) {
	for _, t := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized} {
		c := meta.FindStatusCondition(nc.Status.Conditions, t)
		if c == nil {
			setCondition(nc, now, v1.ConditionTypeReady, metav1.ConditionUnknown, "AwaitingReconciliation", t+" is not set yet")
			return
		}
		if c.Status != metav1.ConditionTrue {
			setCondition(nc, now, v1.ConditionTypeReady, c.Status, c.Reason, c.Message)
			return
		}
	}
	setCondition(nc, now, v1.ConditionTypeReady, metav1.ConditionTrue, "Ready", "")
}
