package localaws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// BootFailure is an instance whose node never registered because its boot
// failed, with the reason, as the node's bootstrap log would say it.
type BootFailure struct {
	// InstanceID is the instance.
	InstanceID string
	// NodeName is the Node the instance would have registered.
	NodeName string
	// Reason says why the boot failed.
	Reason string
	// Time is when the bridge saw the failure, by the endpoint's clock.
	Time time.Time
}

// errRetry makes the bridge retry an instance later, with backoff.
var errRetry = errors.New("retry later")

// NodeBridge plays the boot of EC2 instances against a Kubernetes cluster:
// a running instance whose user data boots becomes a kwok-managed Node, and
// the Node is deleted when the instance stops or terminates. It follows the
// EC2 service's instances (OnInstanceChange) and resyncs all of them on
// start. A Node registers Config.BootDelay after its instance entered
// running, by the endpoint's clock. Failed API calls are retried with
// exponential backoff (50ms to 10s).
type NodeBridge struct {
	server *Server
	kube   client.Client
	log    logr.Logger
	queue  workqueue.TypedRateLimitingInterface[string]
	wg     sync.WaitGroup // boot-delay timers

	mu       sync.Mutex
	booting  map[string]bool // instance id -> a boot-delay timer is armed
	failures []BootFailure
	failed   map[string]bool
	nodes    map[string]string // instance id -> node name, for vanished instances
	catalogs map[catalogKey]map[string]catalog.InstanceType
}

// catalogKey selects one computed catalog.
type catalogKey struct {
	family  catalog.AMIFamily
	maxPods int32 // 0: the family's default
}

// NewNodeBridge returns a bridge from the server's EC2 instances to Nodes
// written through kube. Start runs one when Config.Kubernetes is set; call Run
// to run one yourself.
func NewNodeBridge(s *Server, kube client.Client) *NodeBridge {
	return &NodeBridge{
		server: s, kube: kube, log: s.cfg.Logger.WithName("nodes"),
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 10*time.Second)),
		failed: map[string]bool{}, nodes: map[string]string{}, booting: map[string]bool{},
		catalogs: map[catalogKey]map[string]catalog.InstanceType{},
	}
}

// Run follows the instances until ctx ends. It is meant to run once.
func (b *NodeBridge) Run(ctx context.Context) {
	unsubscribe := b.server.ec2.OnInstanceChange(func(i ec2.Instance) { b.queue.Add(i.ID) })
	defer unsubscribe()
	for _, i := range b.server.ec2.Instances() {
		b.queue.Add(i.ID)
	}
	go func() {
		<-ctx.Done()
		b.queue.ShutDown()
	}()
	b.log.Info("node bridge started", "bootDelay", b.server.cfg.BootDelay)
	for b.next(ctx) {
	}
	b.wg.Wait()
	b.log.Info("node bridge stopped")
}

// next handles one queued instance; it returns false once the queue is shut down.
func (b *NodeBridge) next(ctx context.Context) bool {
	id, shutdown := b.queue.Get()
	if shutdown {
		return false
	}
	defer b.queue.Done(id)
	if err := b.reconcile(ctx, id); err != nil {
		if ctx.Err() != nil {
			return false
		}
		b.log.V(1).Info("retrying instance", "instance", id, "reason", err.Error(), "attempts", b.queue.NumRequeues(id)+1)
		b.queue.AddRateLimited(id)
		return true
	}
	b.queue.Forget(id)
	return true
}

// BootFailures returns the boot failures seen so far, oldest first.
func (b *NodeBridge) BootFailures() []BootFailure {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.failures)
}

// reconcile brings the Node of one instance in line with its state.
func (b *NodeBridge) reconcile(ctx context.Context, id string) error {
	inst, ok := b.server.ec2.Instance(id)
	if !ok {
		b.mu.Lock()
		name := b.nodes[id]
		b.mu.Unlock()
		if name == "" {
			return nil
		}
		if err := b.deleteNode(ctx, name, id, "instance vanished"); err != nil {
			return err
		}
		b.mu.Lock()
		delete(b.nodes, id)
		b.mu.Unlock()
		return nil
	}
	switch inst.State {
	case ec2.StatePending:
		return nil
	case ec2.StateRunning:
		if wait := b.bootWait(inst); wait > 0 {
			b.wakeAfter(ctx, id, wait)
			return nil
		}
		return b.ensureNode(ctx, inst)
	}
	return b.deleteNode(ctx, inst.PrivateDNSName, id, "instance "+string(inst.State))
}

// bootWait is how long the running instance's boot still takes: the time
// left until StateChangeTime + Config.BootDelay by the clock, 0 once due.
func (b *NodeBridge) bootWait(inst ec2.Instance) time.Duration {
	delay := b.server.cfg.BootDelay
	if delay <= 0 {
		return 0
	}
	return max(inst.StateChangeTime.Add(delay).Sub(b.server.cfg.Clock.Now()), 0)
}

// wakeAfter queues the instance again once d has passed by the endpoint's
// clock (a fake clock in tests, which the workqueue's own delays would not
// follow). One timer is armed per instance at a time.
func (b *NodeBridge) wakeAfter(ctx context.Context, id string, d time.Duration) {
	b.mu.Lock()
	armed := b.booting[id]
	b.booting[id] = true
	b.mu.Unlock()
	if armed {
		return
	}
	timer := b.server.cfg.Clock.NewTimer(d)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C():
			b.mu.Lock()
			delete(b.booting, id)
			b.mu.Unlock()
			b.queue.Add(id)
		}
	}()
}

// Booting returns the running instances whose Node waits for
// Config.BootDelay to pass, sorted.
func (b *NodeBridge) Booting() []string {
	b.mu.Lock()
	ids := make([]string, 0, len(b.booting))
	for id := range b.booting {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	out := ids[:0]
	for _, id := range ids {
		if inst, ok := b.server.ec2.Instance(id); ok && inst.State == ec2.StateRunning {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// providerID is the Node spec.providerID of an instance.
func providerID(inst ec2.Instance) string {
	return "aws:///" + inst.Zone + "/" + inst.ID
}

// instanceIDOf returns the instance id of an aws:///<zone>/<id> provider ID.
func instanceIDOf(providerID string) (string, bool) {
	rest, ok := strings.CutPrefix(providerID, "aws:///")
	if !ok {
		return "", false
	}
	_, id, ok := strings.Cut(rest, "/")
	return id, ok && strings.HasPrefix(id, "i-")
}

// deleteNode deletes the instance's Node, as the cloud node lifecycle
// controller does; a Node of the same name that belongs to another instance
// is left alone.
func (b *NodeBridge) deleteNode(ctx context.Context, name, id, why string) error {
	if name == "" {
		return nil
	}
	node := &corev1.Node{}
	if err := b.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading node %s of instance %s: %w", name, id, err)
	}
	if owner, _ := instanceIDOf(node.Spec.ProviderID); owner != id {
		return nil
	}
	if err := b.kube.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting node %s of instance %s: %w", name, id, err)
	}
	b.log.Info("deleted node", "node", name, "instance", id, "reason", why)
	return nil
}

// ensureNode registers the Node of a running instance unless its boot fails.
func (b *NodeBridge) ensureNode(ctx context.Context, inst ec2.Instance) error {
	b.mu.Lock()
	failed := b.failed[inst.ID]
	b.mu.Unlock()
	if failed {
		return nil
	}
	name := inst.PrivateDNSName
	existing := &corev1.Node{}
	err := b.kube.Get(ctx, client.ObjectKey{Name: name}, existing)
	switch {
	case err == nil:
		return b.adoptOrEvict(ctx, existing, inst)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading node %s of instance %s: %w", name, inst.ID, err)
	}
	node, reason := b.buildNode(inst)
	if reason != "" {
		b.fail(inst, reason)
		return nil
	}
	b.mu.Lock()
	b.nodes[inst.ID] = name
	b.mu.Unlock()
	status := node.Status
	if err := b.kube.Create(ctx, node); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating node %s of instance %s: %w: %w", name, inst.ID, err, errRetry)
		}
		return fmt.Errorf("creating node %s of instance %s: %w", name, inst.ID, err)
	}
	if len(node.Status.Capacity) == 0 {
		node.Status = status
		if err := b.kube.Status().Update(ctx, node); err != nil {
			return fmt.Errorf("writing the status of node %s of instance %s: %w", name, inst.ID, err)
		}
	}
	b.log.Info("registered node", "node", name, "instance", inst.ID, "instanceType", inst.InstanceType, "zone", inst.Zone)
	return nil
}

// adoptOrEvict handles a Node that already has the instance's name: it is
// the instance's own (done), or a leftover of an instance that no longer
// runs with the same address, which is deleted so that the next attempt
// registers the new one.
func (b *NodeBridge) adoptOrEvict(ctx context.Context, existing *corev1.Node, inst ec2.Instance) error {
	if existing.Spec.ProviderID == providerID(inst) {
		b.mu.Lock()
		b.nodes[inst.ID] = existing.Name
		b.mu.Unlock()
		return nil
	}
	other, ok := instanceIDOf(existing.Spec.ProviderID)
	if !ok {
		return fmt.Errorf("node %s exists with provider ID %q, not instance %s's: %w", existing.Name, existing.Spec.ProviderID, inst.ID, errRetry)
	}
	if o, live := b.server.ec2.Instance(other); live && o.State == ec2.StateRunning {
		return fmt.Errorf("node %s belongs to running instance %s, not %s: %w", existing.Name, other, inst.ID, errRetry)
	}
	if err := b.kube.Delete(ctx, existing, client.Preconditions{UID: &existing.UID}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting stale node %s of instance %s: %w", existing.Name, other, err)
	}
	b.log.Info("deleted stale node", "node", existing.Name, "instance", other, "replacedBy", inst.ID)
	return fmt.Errorf("node %s was stale: %w", existing.Name, errRetry)
}

// fail records a boot failure once per instance.
func (b *NodeBridge) fail(inst ec2.Instance, reason string) {
	b.mu.Lock()
	b.failed[inst.ID] = true
	b.failures = append(b.failures, BootFailure{InstanceID: inst.ID, NodeName: inst.PrivateDNSName, Reason: reason,
		Time: b.server.cfg.Clock.Now()})
	b.mu.Unlock()
	b.log.Info("instance failed to boot; no node registers", "instance", inst.ID, "node", inst.PrivateDNSName, "reason", reason)
}
