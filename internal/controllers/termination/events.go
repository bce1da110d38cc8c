package termination

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/drain"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Event reasons, named as Karpenter's so that alerts on them keep working.
const (
	// ReasonDisrupted is published on a pod deleted directly because the
	// node's termination grace period is running out.
	ReasonDisrupted = "Disrupted"
	// ReasonFailedDraining is published on a node whose pods are not all gone yet.
	ReasonFailedDraining = "FailedDraining"
	// ReasonTerminationGracePeriodExpiring is published on a node and its
	// NodeClaim that have a termination deadline.
	ReasonTerminationGracePeriodExpiring = "TerminationGracePeriodExpiring"
	// ReasonAwaitingVolumeDetachment is published on a drained node whose
	// volumes are still attached.
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	// ReasonFailedTermination is published on a NodeClaim whose instance the
	// cloud provider failed to delete.
	ReasonFailedTermination = "FailedTermination"
)

func terminationGracePeriodExpiringEvent(obj runtime.Object, name string, deadline time.Time) events.Event {
	return events.Event{
		InvolvedObject: obj,
		Type:           corev1.EventTypeWarning,
		Reason:         ReasonTerminationGracePeriodExpiring,
		Message:        "All pods will be deleted by " + deadline.UTC().Format(time.RFC3339),
		DedupeValues:   []string{name},
	}
}

func podDisruptedEvent(pod *corev1.Pod, gracePeriodSeconds int64, deadline time.Time) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeNormal,
		Reason:         ReasonDisrupted,
		Message: fmt.Sprintf("Deleting the pod to accommodate the terminationTime %s of the node. The pod was granted %d seconds of grace-period of its %d terminationGracePeriodSeconds. This bypasses the PDB of the pod and the do-not-disrupt annotation.",
			deadline.UTC().Format(time.RFC3339), gracePeriodSeconds, int64(drain.TerminationGracePeriod(pod)/time.Second)),
		DedupeValues: []string{string(pod.UID)},
	}
}

func failedDrainingEvent(node *corev1.Node, plan drain.Plan) events.Event {
	return events.Event{
		InvolvedObject: node,
		Type:           corev1.EventTypeWarning,
		Reason:         ReasonFailedDraining,
		Message:        "Failed to drain node, " + drainingMessage(plan),
		DedupeValues:   []string{node.Name},
	}
}

// drainingMessage says what a drain is waiting for, for the event and the
// Drained condition.
func drainingMessage(plan drain.Plan) string {
	msg := fmt.Sprintf("%d pods are waiting to be evicted (draining %s pods)", len(plan.Waiting), plan.Group)
	if len(plan.Protected) > 0 {
		msg += fmt.Sprintf(", %d of them protected by %s", len(plan.Protected), v1.DoNotDisruptAnnotationKey)
	}
	return msg
}

func awaitingVolumeDetachmentEvent(node *corev1.Node, attachments []*storagev1.VolumeAttachment) events.Event {
	return events.Event{
		InvolvedObject: node,
		Type:           corev1.EventTypeNormal,
		Reason:         ReasonAwaitingVolumeDetachment,
		Message:        "Awaiting deletion of bound volumeattachments (" + volumeAttachmentNames(attachments) + ")",
		DedupeValues:   []string{node.Name},
	}
}

func volumeAttachmentNames(attachments []*storagev1.VolumeAttachment) string {
	const shown = 5
	names := make([]string, 0, shown)
	for i, va := range attachments {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d other(s)", len(attachments)-shown))
			break
		}
		names = append(names, va.Name)
	}
	return strings.Join(names, ", ")
}

func failedTerminationEvent(nodeClaim *v1.NodeClaim, err error) events.Event {
	return events.Event{
		InvolvedObject: nodeClaim,
		Type:           corev1.EventTypeWarning,
		Reason:         ReasonFailedTermination,
		Message:        "Failed to terminate instance, " + err.Error(),
		DedupeValues:   []string{nodeClaim.Name, err.Error()},
	}
}
