package aws

import (
	"fmt"
	"strings"
	"sync"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/launchtemplate"
)

// suitedTypes remembers, per class, the instance types its AMIs suit, for
// as long as the instance-type provider hands out the same cached list and
// the class resolves the same AMIs: filtering the ~800 types of a class
// takes milliseconds, and provisioning and disruption ask on every pass.
type suitedTypes struct {
	mu sync.Mutex
	// entries are keyed by class name, so a class deleted and created
	// again replaces its entry and the map holds one per class name.
	entries map[string]suitedEntry
}

// suitedEntry is one class's filtered list and what it was computed from.
type suitedEntry struct {
	from   []*cloudprovider.InstanceType
	amis   string
	suited []*cloudprovider.InstanceType
}

// get returns the types of all that an AMI of the class suits.
func (s *suitedTypes) get(nc *awsv1.EC2NodeClass, all []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	key, amis := nc.Name, amisKey(nc.Status.AMIs)
	s.mu.Lock()
	e, ok := s.entries[key]
	s.mu.Unlock()
	if ok && e.amis == amis && sameList(e.from, all) {
		return e.suited
	}
	suited := launchtemplate.SuitedToAMIs(nc.Status.AMIs, all)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[string]suitedEntry{}
	}
	s.entries[key] = suitedEntry{from: all, amis: amis, suited: suited}
	return suited
}

// sameList reports whether a and b are the same slice (the provider's
// cached list), not merely equal.
func sameList(a, b []*cloudprovider.InstanceType) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// amisKey identifies a class's resolved AMIs and their requirements.
func amisKey(amis []awsv1.AMI) string {
	var b strings.Builder
	for _, ami := range amis {
		fmt.Fprintf(&b, "%s%v;", ami.ID, ami.Requirements)
	}
	return b.String()
}
