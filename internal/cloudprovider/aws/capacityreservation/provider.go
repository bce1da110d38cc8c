package capacityreservation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/selector"
)

// ExpirationWindow is how long before its end time a capacity block is
// expiring: EC2 starts reclaiming its instances then.
const ExpirationWindow = 40 * time.Minute

// maxResults is the page size of DescribeCapacityReservations.
const maxResults = 1000

// Provider lists the capacity reservations selector terms match and tracks
// their available counts. It is safe for concurrent use.
type Provider struct {
	ec2   sdk.EC2
	clock clock.PassiveClock

	mu        sync.Mutex
	available map[string]int
	seq       uint64
}

// NewProvider returns a Provider that calls DescribeCapacityReservations
// through client and decides expiry with clk.
func NewProvider(client sdk.EC2, clk clock.PassiveClock) *Provider {
	return &Provider{ec2: client, clock: clk, available: map[string]int{}}
}

// List returns the active reservations terms match, as status entries
// sorted by ID, and records their available counts. Reservations with an
// instance match criteria or type Dovetail does not know are left out.
func (p *Provider) List(ctx context.Context, terms []v1.CapacityReservationSelectorTerm) ([]v1.CapacityReservation, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	found, err := selector.Union(ctx, Filters(terms), p.describe, func(cr ec2types.CapacityReservation) string {
		return aws.ToString(cr.CapacityReservationId)
	})
	if err != nil {
		return nil, err
	}
	var out []v1.CapacityReservation
	counts := map[string]int{}
	for _, cr := range found {
		status, ok := FromEC2(p.clock.Now(), cr)
		if !ok {
			continue
		}
		out = append(out, status)
		counts[status.ID] = int(aws.ToInt32(cr.AvailableInstanceCount))
	}
	slices.SortFunc(out, func(a, b v1.CapacityReservation) int { return strings.Compare(a.ID, b.ID) })
	p.sync(counts)
	return out, nil
}

// describe pages through DescribeCapacityReservations with one filter set;
// a filter named capacity-reservation-id becomes CapacityReservationIds.
func (p *Provider) describe(ctx context.Context, filters []ec2types.Filter) ([]ec2types.CapacityReservation, error) {
	in := &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(maxResults)}
	for _, f := range filters {
		if aws.ToString(f.Name) == idFilter {
			in.CapacityReservationIds = f.Values
			continue
		}
		in.Filters = append(in.Filters, f)
	}
	var out []ec2types.CapacityReservation
	pages := ec2.NewDescribeCapacityReservationsPaginator(p.ec2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing capacity reservations: %w", err)
		}
		out = append(out, page.CapacityReservations...)
	}
	return out, nil
}

// idFilter marks the IDs of id terms; DescribeCapacityReservations takes
// them as CapacityReservationId.N, not as a filter.
const idFilter = "capacity-reservation-id"

// Filters turns selector terms into one filter set per term (ids of all id
// terms collapsed into one set), each limited to active reservations. Terms
// are ORed; the fields of a term are ANDed.
func Filters(terms []v1.CapacityReservationSelectorTerm) [][]ec2types.Filter {
	active := ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}}
	var ids []string
	var out [][]ec2types.Filter
	for _, term := range terms {
		if term.ID != "" {
			ids = append(ids, term.ID)
			continue
		}
		filters := selector.TagFilters(term.Tags)
		if term.OwnerID != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("owner-id"), Values: []string{term.OwnerID}})
		}
		if term.InstanceMatchCriteria != "" {
			filters = append(filters, ec2types.Filter{Name: aws.String("instance-match-criteria"), Values: []string{term.InstanceMatchCriteria}})
		}
		out = append(out, append(filters, active))
	}
	if len(ids) > 0 {
		out = append([][]ec2types.Filter{{{Name: aws.String(idFilter), Values: ids}, active}}, out...)
	}
	return out
}

// FromEC2 converts a described reservation into its status entry, or
// reports false for one Dovetail cannot launch into (unknown instance match
// criteria or reservation type, missing fields). A capacity block is
// expiring from ExpirationWindow before its end time.
func FromEC2(now time.Time, cr ec2types.CapacityReservation) (v1.CapacityReservation, bool) {
	if cr.CapacityReservationId == nil || cr.InstanceType == nil || cr.AvailabilityZone == nil {
		return v1.CapacityReservation{}, false
	}
	switch cr.InstanceMatchCriteria {
	case ec2types.InstanceMatchCriteriaOpen, ec2types.InstanceMatchCriteriaTargeted:
	default:
		return v1.CapacityReservation{}, false
	}
	reservationType := v1.CapacityReservationTypeDefault
	switch cr.ReservationType {
	case "", ec2types.CapacityReservationType(v1.CapacityReservationTypeDefault):
	case ec2types.CapacityReservationType(v1.CapacityReservationTypeCapacityBlock):
		reservationType = v1.CapacityReservationTypeCapacityBlock
	default:
		return v1.CapacityReservation{}, false
	}
	out := v1.CapacityReservation{
		ID:                     aws.ToString(cr.CapacityReservationId),
		AvailabilityZone:       aws.ToString(cr.AvailabilityZone),
		InstanceType:           aws.ToString(cr.InstanceType),
		InstanceMatchCriteria:  string(cr.InstanceMatchCriteria),
		OwnerID:                aws.ToString(cr.OwnerId),
		ReservationType:        reservationType,
		State:                  v1.CapacityReservationStateActive,
		AvailableInstanceCount: aws.Int32(max(aws.ToInt32(cr.AvailableInstanceCount), 0)),
	}
	if cr.EndDate != nil {
		end := metav1.NewTime(*cr.EndDate)
		out.EndTime = &end
		if reservationType == v1.CapacityReservationTypeCapacityBlock && !now.Before(cr.EndDate.Add(-ExpirationWindow)) {
			out.State = v1.CapacityReservationStateExpiring
		}
	}
	return out, true
}

// sync replaces the counts of the reservations EC2 just described.
func (p *Provider) sync(counts map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := false
	for id, n := range counts {
		if have, ok := p.available[id]; !ok || have != n {
			p.available[id] = n
			changed = true
		}
	}
	if changed {
		p.seq++
	}
}

// Available returns how many more instances a reservation takes, as last
// described and counted since; ok is false for a reservation never
// described, whose caller should use the status count.
func (p *Provider) Available(id string) (n int, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok = p.available[id]
	return n, ok
}

// MarkLaunched counts one instance launched into a reservation.
func (p *Provider) MarkLaunched(id string) { p.update(id, func(n int) int { return n - 1 }) }

// MarkTerminated counts one instance of a reservation terminated.
func (p *Provider) MarkTerminated(id string) { p.update(id, func(n int) int { return n + 1 }) }

// MarkUnavailable records that EC2 refused a launch into a reservation:
// it takes no more instances until EC2 describes it again.
func (p *Provider) MarkUnavailable(id string) { p.update(id, func(int) int { return 0 }) }

// update applies f to the count of a described reservation (never below
// zero), bumping SeqNum when the count changes; unknown reservations are
// left to their status count.
func (p *Provider) update(id string, f func(n int) int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.available[id]
	if !ok {
		return
	}
	if m := max(f(n), 0); m != n {
		p.available[id] = m
		p.seq++
	}
}

// SeqNum changes whenever a count does.
func (p *Provider) SeqNum() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq
}
