package capacityreservation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	controllerruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// EventCapacityBlockExpiring is the reason of the event on a NodeClaim
// deleted because its capacity block is about to end.
const EventCapacityBlockExpiring = "CapacityBlockExpiring"

// ExpirationController drains the nodes of a capacity block before EC2
// reclaims them: from ExpirationWindow before the block's end time, each
// NodeClaim launched into it is deleted, so the core drains its Node (and
// the provisioner finds its pods a new home) while there is time.
type ExpirationController struct {
	kubeClient client.Client
	clock      clock.Clock
	recorder   events.Recorder
}

// NewExpirationController returns the controller; recorder may be nil.
func NewExpirationController(kubeClient client.Client, clk clock.Clock, recorder events.Recorder) *ExpirationController {
	return &ExpirationController{kubeClient: kubeClient, clock: clk, recorder: recorder}
}

// Name identifies the controller in logs and metrics.
func (c *ExpirationController) Name() string { return "aws.capacityreservation.expiration" }

// Register adds the controller to the manager; it watches NodeClaims.
func (c *ExpirationController) Register(_ context.Context, mgr manager.Manager) error {
	err := controllerruntime.NewControllerManagedBy(mgr).
		Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
	if err != nil {
		return fmt.Errorf("registering controller %s: %w", c.Name(), err)
	}
	return nil
}

// Reconcile deletes a NodeClaim in an expiring capacity block, or comes
// back when the block starts expiring.
func (c *ExpirationController) Reconcile(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	// 1. Only live claims launched into a capacity block.
	id := nc.Labels[awsv1.LabelCapacityReservationID]
	if id == "" || nc.Labels[awsv1.LabelCapacityReservationType] != string(awsv1.CapacityReservationTypeCapacityBlock) ||
		!nc.DeletionTimestamp.IsZero() || nc.Spec.NodeClassRef == nil {
		return reconcile.Result{}, nil
	}
	// 2. The block's end time, as the class's status has it.
	class := &awsv1.EC2NodeClass{}
	if err := c.kubeClient.Get(ctx, client.ObjectKey{Name: nc.Spec.NodeClassRef.Name}, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("getting ec2nodeclass of nodeclaim %s: %w", nc.Name, err))
	}
	var end *awsv1.CapacityReservation
	for i := range class.Status.CapacityReservations {
		if class.Status.CapacityReservations[i].ID == id {
			end = &class.Status.CapacityReservations[i]
		}
	}
	if end == nil || end.EndTime == nil {
		return reconcile.Result{}, nil
	}
	// 3. Not yet expiring: come back when it is.
	if wait := end.EndTime.Add(-ExpirationWindow).Sub(c.clock.Now()); wait > 0 && end.State != awsv1.CapacityReservationStateExpiring {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	// 4. Expiring: delete the claim; the core drains and terminates.
	if err := c.kubeClient.Delete(ctx, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("deleting nodeclaim %s of expiring capacity block %s: %w", nc.Name, id, err))
	}
	log.FromContext(ctx).Info("Deleting NodeClaim: capacity block expiring", "NodeClaim", klog.KObj(nc), "capacityReservation", id, "endTime", end.EndTime)
	if c.recorder != nil {
		c.recorder.Publish(events.Event{InvolvedObject: nc, Type: corev1.EventTypeNormal, Reason: EventCapacityBlockExpiring,
			Message: fmt.Sprintf("Capacity block %s ends at %s; draining the node before EC2 reclaims it", id, end.EndTime.UTC().Format("2006-01-02T15:04:05Z"))})
	}
	return reconcile.Result{}, nil
}
