package cloudprovider

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// CloudProvider launches and terminates the instances behind NodeClaims and
// describes what can be launched. Implementations must be safe for concurrent
// use; the core calls them from many reconcilers at once.
type CloudProvider interface {
	// Create launches one instance satisfying the NodeClaim's requirements and
	// resource requests, choosing among the instance types listed in its
	// node.kubernetes.io/instance-type requirement (normally the cheapest
	// available offering). It returns a copy of the claim with
	// status.providerID, status.capacity and status.allocatable set and the
	// labels of the chosen instance type, zone and capacity type added. It
	// returns an InsufficientCapacityError when no offering can be launched,
	// a NodeClassNotReadyError when the referenced NodeClass cannot be used
	// yet, and a CreateError (with a condition reason) for other failures.
	Create(ctx context.Context, nodeClaim *v1.NodeClaim) (*v1.NodeClaim, error)
	// Delete terminates the claim's instance. It returns a
	// NodeClaimNotFoundError once the instance is gone; the core calls it
	// until it does.
	Delete(ctx context.Context, nodeClaim *v1.NodeClaim) error
	// Get returns the claim for the instance with the given provider ID, or a
	// NodeClaimNotFoundError if there is no such (running) instance.
	Get(ctx context.Context, providerID string) (*v1.NodeClaim, error)
	// List returns a claim for every instance the provider launched for this
	// cluster, including ones the core has no NodeClaim for (to collect them).
	List(ctx context.Context) ([]*v1.NodeClaim, error)
	// GetInstanceTypes returns every instance type the NodePool could use,
	// including types none of whose offerings is available right now: the
	// core needs them to explain why a pod cannot be placed and to detect
	// drift. Offerings carry zone, capacity type, price and availability.
	GetInstanceTypes(ctx context.Context, nodePool *v1.NodePool) ([]*InstanceType, error)
	// IsDrifted reports why the claim's instance no longer matches its
	// NodeClass (for example a new image), or "" if it still does.
	IsDrifted(ctx context.Context, nodeClaim *v1.NodeClaim) (DriftReason, error)
	// RepairPolicies lists the node conditions that mark a node unhealthy
	// and how long each is tolerated before the node is replaced.
	RepairPolicies() []RepairPolicy
	// Name identifies the provider in logs and metrics, for example "aws".
	Name() string
	// GetSupportedNodeClasses lists the NodeClass kinds the provider
	// understands; the first is the default for references that omit it.
	GetSupportedNodeClasses() []schema.GroupVersionKind
}

// DriftReason says why an instance no longer matches its NodePool or
// NodeClass; the empty string means it has not drifted.
type DriftReason string

// RepairPolicy says that a node whose condition ConditionType has had status
// ConditionStatus for longer than TolerationDuration should be replaced.
type RepairPolicy struct {
	ConditionType      string
	ConditionStatus    metav1.ConditionStatus
	TolerationDuration time.Duration
}
