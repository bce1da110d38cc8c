package health

import (
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// Request asks for one unhealthy node to be repaired: the health
// controller decided that it is due (toleration over, safeguard passed)
// and the disruption controller carries the repair out, replacement first.
type Request struct {
	// NodeClaim and Node name the node to repair.
	NodeClaim, Node string
	// Condition is the node condition that matched Policy.
	Condition corev1.NodeCondition
	Policy    cloudprovider.RepairPolicy
	// Unhealthy and Total are the safeguard's count when it was decided.
	Unhealthy, Total int
}

// ConditionLabel is the condition label of
// karpenter_nodeclaims_unhealthy_disrupted_total: the condition type in
// snake case.
func (r Request) ConditionLabel() string { return SnakeCase(string(r.Condition.Type)) }

// Why explains the request in a phrase, for events and logs, for example
// "Ready=False since 2030-01-02T03:04:05Z, longer than the 30m0s the cloud
// provider tolerates".
func (r Request) Why() string {
	return fmt.Sprintf("%s=%s since %s, longer than the %s the cloud provider tolerates",
		r.Condition.Type, r.Condition.Status, r.Condition.LastTransitionTime.UTC().Format(time.RFC3339), r.Policy.TolerationDuration)
}

// Requests is the set of repairs the health controller asks for, keyed by
// NodeClaim name. The health controller is its only writer; the disruption
// controller reads it every pass and is woken by Changed when a request is
// added. It is safe for concurrent use. A restart starts it empty: the
// health controller reconciles every Node when it starts and asks again.
type Requests struct {
	mu      sync.Mutex
	byClaim map[string]Request
	changed chan struct{}
}

// NewRequests returns an empty set.
func NewRequests() *Requests {
	return &Requests{byClaim: map[string]Request{}, changed: make(chan struct{}, 1)}
}

// Add records (or updates) a request and reports whether it is new; a new
// one wakes the reader.
func (r *Requests) Add(req Request) bool {
	r.mu.Lock()
	_, known := r.byClaim[req.NodeClaim]
	r.byClaim[req.NodeClaim] = req
	r.mu.Unlock()
	if !known {
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	return !known
}

// Remove drops the request of the NodeClaim, if any, and reports whether
// there was one.
func (r *Requests) Remove(nodeClaim string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.byClaim[nodeClaim]
	delete(r.byClaim, nodeClaim)
	return ok
}

// RemoveNode drops the requests of the named Node and returns the
// NodeClaims they were for.
func (r *Requests) RemoveNode(node string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for claim, req := range r.byClaim {
		if req.Node == node {
			delete(r.byClaim, claim)
			out = append(out, claim)
		}
	}
	return out
}

// Get returns the request of the NodeClaim.
func (r *Requests) Get(nodeClaim string) (Request, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, ok := r.byClaim[nodeClaim]
	return req, ok
}

// Snapshot returns a copy of every request, by NodeClaim name.
func (r *Requests) Snapshot() map[string]Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.byClaim)
}

// Changed receives a value after a new request was added (coalesced: one
// value may stand for several requests).
func (r *Requests) Changed() <-chan struct{} { return r.changed }
