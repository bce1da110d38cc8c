package kwok

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
)

// Names the provider writes on the Nodes it launches. The kwok ones must
// match how the local control plane starts kwok (internal/controlplane);
// a test checks that they do.
const (
	// ProviderIDPrefix starts the provider ID of every kwok instance; the
	// rest is the Node's name.
	ProviderIDPrefix = "kwok://"
	// KwokNodeAnnotationKey and KwokNodeAnnotationValue mark a Node the kwok
	// controller manages (makes Ready, heartbeats, runs its pods). Every Node
	// the provider creates carries it from the start: kwok only takes over
	// Nodes that are created annotated, not Nodes annotated later.
	KwokNodeAnnotationKey   = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
	// PartitionLabelKey marks the Nodes (and the claims of booting
	// instances) of a provider; its value is Options.Partition. Get, List
	// and Delete only see their own partition, so that several providers
	// (or tests) can share a cluster.
	PartitionLabelKey = kwokv1alpha1.Group + "/partition"
	// KarpenterKWOKPartitionLabelKey is the label Karpenter's kwok provider
	// puts on the Nodes it launches; such Nodes belong to DefaultPartition.
	KarpenterKWOKPartitionLabelKey = "kwok-partition"
	// RegisterAfterLabelKey is the label Create adds to the claim of an
	// instance launched with a registration delay: the time, in Unix
	// nanoseconds, at which its Node appears. The core stores the claim's
	// labels, so the claim is the durable record of the booting instance
	// and the RegistrationController creates the Node then, across restarts.
	// It never reaches the Node: the RegistrationController removes it from
	// the claim once the Node exists, before the core copies claim labels.
	RegisterAfterLabelKey = kwokv1alpha1.Group + "/register-after"
	// NodeClassAnnotationKey names the KWOKNodeClass a Node was launched with.
	NodeClassAnnotationKey = kwokv1alpha1.Group + "/nodeclass"
	// DefaultPartition is the partition of a provider whose Options leave it empty.
	DefaultPartition = "default"
	// UnavailableOfferingTTL is how long an offering that failed with
	// insufficient capacity is reported unavailable, as in Karpenter's AWS
	// provider.
	UnavailableOfferingTTL = 3 * time.Minute
)

// Options configure a provider. The zero value is usable: the default
// catalog, partition "default", no delays, no injected failures.
type Options struct {
	// InstanceTypes picks the set of instance types offered; "" means
	// InstanceTypesEC2.
	InstanceTypes InstanceTypeSet
	// Catalog selects the EC2 catalog view (AMI family, kubelet settings,
	// region, zones) of the InstanceTypesEC2 set; nil means
	// catalog.DefaultOptions(): AL2023 in us-east-1a, us-east-1b and
	// us-east-1c. Other sets have fixed zones and take no catalog options.
	Catalog *catalog.Options
	// Partition is the value of PartitionLabelKey on the Nodes this
	// provider launches, and the only Nodes it reports; "" means
	// DefaultPartition. It must be a valid label value.
	Partition string
	// LaunchDelay is how long Create blocks before the instance exists,
	// like a cloud API call. It waits on the injected clock and returns
	// early when the context ends.
	LaunchDelay time.Duration
	// RegistrationDelay is how long a launched instance boots before its
	// Node appears (and kwok makes it Ready). A KWOKNodeClass's
	// spec.nodeRegistrationDelay overrides it.
	RegistrationDelay time.Duration
	// InsufficientCapacity, if set, is asked before each launch; an offering
	// for which it returns true fails with insufficient capacity (see
	// FailOfferings). It is for tests and must be safe for concurrent use.
	InsufficientCapacity func(OfferingID) bool
}

// validate reports every invalid field.
func (o Options) validate() error {
	var errs []error
	switch o.InstanceTypes {
	case "", InstanceTypesEC2:
	case InstanceTypesKarpenterKWOK:
		if o.Catalog != nil {
			errs = append(errs, fmt.Errorf("catalog options apply to the %q instance types only, not %q", InstanceTypesEC2, o.InstanceTypes))
		}
	default:
		errs = append(errs, fmt.Errorf("instance types %q: not one of %v", o.InstanceTypes, InstanceTypeSets()))
	}
	if o.Partition != "" {
		if msgs := validation.IsValidLabelValue(o.Partition); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("partition %q: %s", o.Partition, strings.Join(msgs, "; ")))
		}
	}
	if o.LaunchDelay < 0 {
		errs = append(errs, fmt.Errorf("launch delay must not be negative, got %s", o.LaunchDelay))
	}
	if o.RegistrationDelay < 0 {
		errs = append(errs, fmt.Errorf("registration delay must not be negative, got %s", o.RegistrationDelay))
	}
	return errors.Join(errs...)
}

// OfferingID names one offering: an instance type in a zone with a capacity
// type. It keys the insufficient-capacity cache and the injected failures.
type OfferingID struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// String renders the offering as "type/zone/capacity-type".
func (o OfferingID) String() string {
	return o.InstanceType + "/" + o.Zone + "/" + o.CapacityType
}

// FailOfferings returns an Options.InsufficientCapacity function that fails
// exactly the given offerings, always.
func FailOfferings(ids ...OfferingID) func(OfferingID) bool {
	ids = slices.Clone(ids)
	return func(id OfferingID) bool { return slices.Contains(ids, id) }
}
