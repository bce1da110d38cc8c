package instance

import (
	"context"

	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// DefaultConsistencyWindow is how long after a launch a "not found" from EC2
// is taken for eventual consistency rather than for a vanished instance.
const DefaultConsistencyWindow = 5 * time.Minute

// liveStates are the states of an instance that still exists for the core:
// everything but shutting-down and terminated.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// Options configure a Provider.
type Options struct {
	// ClusterName scopes List and the idempotency lookup to the cluster's
	// instances (tag eks:eks-cluster-name).
	ClusterName string
	// ConsistencyWindow, when zero, is DefaultConsistencyWindow.
	ConsistencyWindow time.Duration
	// OnUnavailable is told about each offering EC2 had no capacity for.
	OnUnavailable func(instanceType, zone, capacityType, reason string)
	// OnReservationLaunched is told about each instance launched into a
	// capacity reservation, and OnReservationUnavailable about each
	// reservation EC2 refused a launch into.
	OnReservationLaunched, OnReservationUnavailable func(reservationID string)
	// OnReservationReleased is told when this provider terminates an
	// instance of a capacity reservation.
	OnReservationReleased func(reservationID string)
	// LaunchFailures, when set, counts per-override launch errors with the
	// labels zone, capacity_type and reason
	// (karpenter_cloudprovider_instance_launch_failures_total).
	LaunchFailures *prometheus.CounterVec
}

// Provider launches, describes and terminates instances. It is safe for
// concurrent use.
type Provider struct {
	ec2   sdk.EC2
	clock clock.Clock
	opts  Options

	mu sync.Mutex
	// launched maps instance IDs this process launched to their launch time,
	// for the eventual-consistency window.
	launched map[string]time.Time
}

// NewProvider returns a Provider calling EC2 through client.
func NewProvider(client sdk.EC2, clk clock.Clock, opts Options) *Provider {
	if opts.ConsistencyWindow == 0 {
		opts.ConsistencyWindow = DefaultConsistencyWindow
	}
	return &Provider{ec2: client, clock: clk, opts: opts, launched: map[string]time.Time{}}
}

// Launch makes the claim's instance, unless one tagged with the claim
// already exists (a launch retried after a crash or a lost status write),
// in which case that instance is returned.
func (p *Provider) Launch(ctx context.Context, req LaunchRequest) (*Instance, error) {
	existing, err := p.ForNodeClaim(ctx, req.NodeClaim)
	if err != nil {
		return nil, err
	}
	if existing != nil {
		return existing, nil
	}
	inst, err := p.launch(ctx, req)
	if err != nil {
		return nil, err
	}
	inst.LaunchTime = p.clock.Now()
	p.mu.Lock()
	p.launched[inst.ID] = inst.LaunchTime
	p.mu.Unlock()
	return inst, nil
}

// ForNodeClaim returns the cluster's live instance tagged with the claim's
// name, or nil if there is none. An instance launched a moment ago may not
// be described yet; see the package documentation.
func (p *Provider) ForNodeClaim(ctx context.Context, nodeClaim string) (*Instance, error) {
	instances, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:" + TagNodeClaim), Values: []string{nodeClaim}},
		{Name: aws.String("tag:" + TagEKSCluster), Values: []string{p.opts.ClusterName}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil {
		return nil, fmt.Errorf("looking up the instance of nodeclaim %s: %w", nodeClaim, err)
	}
	if len(instances) == 0 {
		return nil, nil
	}
	return instances[0], nil
}

// Get returns the live instance with the given ID. It returns a
// NodeClaimNotFoundError when EC2 does not know it or it is shutting down or
// terminated, except within the consistency window of a launch of this
// process, where it returns a plain (retryable) error.
func (p *Provider) Get(ctx context.Context, id string) (*Instance, error) {
	instances, err := p.describe(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		if awsclient.ErrorCode(err) == "InvalidInstanceID.NotFound" {
			return nil, p.notFound(id, fmt.Errorf("instance %s not found: %w", id, err))
		}
		return nil, fmt.Errorf("describing instance %s: %w", id, err)
	}
	for _, inst := range instances {
		if inst.ID == id && isLive(inst.State) {
			return inst, nil
		}
	}
	return nil, cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is shutting down or terminated", id))
}

// List returns every live instance launched for the cluster by a NodePool.
func (p *Provider) List(ctx context.Context) ([]*Instance, error) {
	instances, err := p.describe(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{TagNodePool}},
		{Name: aws.String("tag:" + TagEKSCluster), Values: []string{p.opts.ClusterName}},
		{Name: aws.String("instance-state-name"), Values: liveStates},
	}})
	if err != nil {
		return nil, fmt.Errorf("listing instances: %w", err)
	}
	return instances, nil
}

// Delete terminates the instance. It returns a NodeClaimNotFoundError once
// EC2 reports it shutting down, terminated or unknown (outside the
// consistency window), so the core knows it is gone.
func (p *Provider) Delete(ctx context.Context, id string) error {
	inst, err := p.Get(ctx, id)
	if err != nil {
		return err
	}
	out, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{inst.ID}})
	if err != nil {
		if awsclient.ErrorCode(err) == "InvalidInstanceID.NotFound" {
			return p.notFound(id, fmt.Errorf("terminating instance %s: %w", id, err))
		}
		return fmt.Errorf("terminating instance %s: %w", id, err)
	}
	for _, change := range out.TerminatingInstances {
		if deref(change.InstanceId) == id && change.CurrentState != nil {
			if inst.CapacityReservationID != "" && p.opts.OnReservationReleased != nil {
				p.opts.OnReservationReleased(inst.CapacityReservationID)
			}
			return cloudprovider.NewNodeClaimNotFoundError(fmt.Errorf("instance %s is %s", id, change.CurrentState.Name))
		}
	}
	return fmt.Errorf("terminating instance %s: EC2 did not report its new state", id)
}

// notFound reports an instance EC2 does not know: gone, unless this process
// launched it within the consistency window.
func (p *Provider) notFound(id string, err error) error {
	p.mu.Lock()
	launched, ok := p.launched[id]
	if ok && p.clock.Since(launched) >= p.opts.ConsistencyWindow {
		delete(p.launched, id)
		ok = false
	}
	p.mu.Unlock()
	if ok {
		return fmt.Errorf("instance %s launched %s ago is not described yet (eventual consistency): %w",
			id, p.clock.Since(launched).Round(time.Second), err)
	}
	return cloudprovider.NewNodeClaimNotFoundError(err)
}

// describe pages through DescribeInstances.
func (p *Provider) describe(ctx context.Context, in *ec2.DescribeInstancesInput) ([]*Instance, error) {
	if len(in.InstanceIds) == 0 {
		in.MaxResults = aws.Int32(1000)
	}
	var out []*Instance
	pager := ec2.NewDescribeInstancesPaginator(p.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				out = append(out, fromEC2(i))
			}
		}
	}
	return out, nil
}

func isLive(state string) bool {
	for _, s := range liveStates {
		if s == state {
			return true
		}
	}
	return false
}

func (p *Provider) onUnavailable(instanceType, zone, capacityType, reason string) {
	if p.opts.OnUnavailable != nil {
		p.opts.OnUnavailable(instanceType, zone, capacityType, reason)
	}
}

func (p *Provider) countLaunchFailure(e FleetError, capacityType string) {
	if p.opts.LaunchFailures != nil {
		p.opts.LaunchFailures.WithLabelValues(e.Zone, capacityType, e.Code).Inc()
	}
}
