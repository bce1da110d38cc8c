// Package chaos_test runs Dovetail on the full local control plane (real
// etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok,
// the controller as its own process) and breaks things while it works: the
// controller killed with SIGKILL and restarted, the kube-apiserver or etcd
// restarted, the kube-apiserver restarted with request limits so tight that
// every client gets 429s, and a second writer updating every NodeClaim.
//
// Each iteration scales out (one pod per node by anti-affinity, plus small
// filler pods guarded by a PodDisruptionBudget), then scales the spread pods
// away so that consolidation must move the fillers, with one fault at a
// random moment of each phase. After each phase it checks: no NodeClaim
// launched beyond what the pods need (no duplicate for one planned node),
// no node without a NodeClaim and no NodeClaim without a node once garbage
// collection and liveness have had their time, every pod Running, and the
// PDB never broken (watched continuously).
//
// DOVETAIL_CHAOS_ITERATIONS sets the number of iterations (default 2, `make
// chaos` runs 20) and DOVETAIL_CHAOS_SEED the random seed (default: the
// time; the seed is printed so a failure can be replayed).
package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

const (
	namespace = "chaos"
	poolName  = "chaos"
	spreadApp = "spread"
	fillerApp = "filler"
)

// fault is one way of breaking the system while it works.
type fault struct {
	name   string
	inject func(t *testing.T, s *suite)
}

var faults = []fault{
	{"kill the controller (SIGKILL) and restart it", func(t *testing.T, s *suite) {
		s.controller.Kill(t)
		s.controller = s.startController(t)
	}},
	{"restart the kube-apiserver", func(t *testing.T, s *suite) {
		if err := s.cluster.ControlPlane.Restart(context.Background(), controlplane.BinaryKubeAPIServer); err != nil {
			t.Fatalf("restarting the kube-apiserver: %v", err)
		}
	}},
	{"restart etcd", func(t *testing.T, s *suite) {
		if err := s.cluster.ControlPlane.Restart(context.Background(), controlplane.BinaryEtcd); err != nil {
			t.Fatalf("restarting etcd: %v", err)
		}
	}},
	{"throttle the kube-apiserver (429s) for 10s", func(t *testing.T, s *suite) {
		cp := s.cluster.ControlPlane
		if err := cp.Restart(context.Background(), controlplane.BinaryKubeAPIServer, "--max-requests-inflight=4", "--max-mutating-requests-inflight=2"); err != nil {
			t.Fatalf("restarting the kube-apiserver with tight limits: %v", err)
		}
		<-time.After(10 * time.Second)
		if err := cp.Restart(context.Background(), controlplane.BinaryKubeAPIServer); err != nil {
			t.Fatalf("restarting the kube-apiserver with its limits back: %v", err)
		}
	}},
	{"a second writer updates every NodeClaim for 15s", func(t *testing.T, s *suite) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for i := 0; ctx.Err() == nil; i++ {
			list := &v1.NodeClaimList{}
			if err := s.cluster.Client.List(ctx, list); err != nil {
				continue
			}
			for j := range list.Items {
				nc := &list.Items[j]
				metav1.SetMetaDataAnnotation(&nc.ObjectMeta, "chaos.dovetail.dev/touched", strconv.Itoa(i))
				_ = s.cluster.Client.Update(ctx, nc) // conflicts are the point
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}},
}

func TestChaos(t *testing.T) {
	iterations := 2
	if v := os.Getenv("DOVETAIL_CHAOS_ITERATIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("DOVETAIL_CHAOS_ITERATIONS=%q: want a positive integer", v)
		}
		iterations = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("DOVETAIL_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("DOVETAIL_CHAOS_SEED=%q: want an unsigned integer", v)
		}
		seed = n
	}
	t.Logf("chaos: %d iterations, seed %d (DOVETAIL_CHAOS_SEED=%d replays it)", iterations, seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	s := newSuite(t)
	violations := 0
	for i := 1; i <= iterations; i++ {
		spreadPods := 3 + rng.IntN(5)
		scaleOutFault, consolidationFault := faults[rng.IntN(len(faults))], faults[rng.IntN(len(faults))]
		scaleOutDelay := time.Duration(rng.IntN(6000)) * time.Millisecond
		consolidationDelay := time.Duration(rng.IntN(6000)) * time.Millisecond
		t.Logf("iteration %d: %d spread pods; scale-out: %s after %v; consolidation: %s after %v",
			i, spreadPods, scaleOutFault.name, scaleOutDelay, consolidationFault.name, consolidationDelay)
		v := s.iteration(t, i, spreadPods, scaleOutFault, scaleOutDelay, consolidationFault, consolidationDelay)
		violations += v
		if t.Failed() {
			break
		}
	}
	t.Logf("chaos: %d iterations run, %d invariant violations, the controller started %d times", iterations, violations, s.restarts)
}

// suite is the cluster, the controller process and the watchers.
type suite struct {
	cluster    *localcluster.Cluster
	binary     string
	workDir    string
	controller *controllerprocess.Process
	claims     *claimWatch
	restarts   int
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cluster, err := localcluster.Start(ctx, controlplane.Options{KeepWorkDir: os.Getenv("DOVETAIL_KEEP_CONTROLPLANE") == "true"}, false)
	if err != nil {
		t.Fatalf("starting the local cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	s := &suite{cluster: cluster, workDir: t.TempDir()}
	s.binary = controllerprocess.Build(t, s.workDir)
	for _, obj := range []client.Object{localcluster.DefaultNodeClass(), chaosNodePool(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}} {
		if err := cluster.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
	s.claims = watchClaims(t, cluster)
	s.controller = s.startController(t)
	t.Cleanup(func() { s.controller.Stop() })
	return s
}

// chaosNodePool consolidates quickly and lets every node go at once, so
// that each phase ends within seconds when nothing goes wrong.
func chaosNodePool() *v1.NodePool {
	np := localcluster.DefaultNodePool()
	np.Name = poolName
	np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration("5s")
	np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("100%")}}
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}})
	return np
}

// iteration runs one scale-out and one consolidation, each with a fault,
// and returns the number of invariant violations it saw.
func (s *suite) iteration(t *testing.T, i, spreadPods int, scaleOutFault fault, scaleOutDelay time.Duration, consolidationFault fault, consolidationDelay time.Duration) int {
	t.Helper()
	ctx := context.Background()
	violations := 0
	fillers := spreadPods
	spread := deployment(fmt.Sprintf("%s-%d", spreadApp, i), int32(spreadPods), "1", true)
	filler := deployment(fmt.Sprintf("%s-%d", fillerApp, i), int32(fillers), "250m", false)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: filler.Name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(fillers - 1))),
			Selector:     filler.Spec.Selector,
		},
	}

	// Scale-out.
	created := s.claims.created()
	for _, obj := range []client.Object{pdb, spread, filler} {
		if err := s.cluster.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
	s.injectAfter(t, scaleOutFault, scaleOutDelay)
	s.waitRunning(t, spreadPods+fillers, "scale-out")
	s.settle(t, "scale-out")
	launched := s.claims.created() - created
	// One node per spread pod; the fillers fit beside them, and one more
	// node is the most a different packing of them can need.
	if launched > spreadPods+1 {
		violations++
		t.Errorf("iteration %d: scale-out launched %d NodeClaims for %d spread pods (want at most %d)", i, launched, spreadPods, spreadPods+1)
	}
	violations += s.checkClaimsAndNodes(t, i, "scale-out")

	// Consolidation: the spread pods go; the fillers must be packed onto
	// fewer nodes through evictions that the PDB limits.
	guard := watchPDB(t, s.cluster, filler, fillers-1)
	if err := s.cluster.Client.Delete(ctx, spread); err != nil {
		t.Fatalf("deleting %s: %v", spread.Name, err)
	}
	s.injectAfter(t, consolidationFault, consolidationDelay)
	env.Eventually(t, 5*time.Minute, "consolidation onto at most 2 nodes", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := s.cluster.Client.List(ctx, list); err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting
		}
		return len(list.Items) <= 2, nil
	})
	s.waitRunning(t, fillers, "consolidation")
	if broken := guard.stop(); broken > 0 {
		violations++
		t.Errorf("iteration %d: the filler PDB (minAvailable %d) was broken %d time(s) during consolidation; lowest ready %d", i, fillers-1, broken, guard.lowest)
	}
	violations += s.checkClaimsAndNodes(t, i, "consolidation")

	// Clean up for the next iteration: all nodes go once the fillers do.
	for _, obj := range []client.Object{filler, pdb} {
		if err := s.cluster.Client.Delete(ctx, obj); err != nil {
			t.Fatalf("deleting %s: %v", obj.GetName(), err)
		}
	}
	env.Eventually(t, 3*time.Minute, "every node consolidated away", func(ctx context.Context) (bool, error) {
		list := &v1.NodeClaimList{}
		if err := s.cluster.Client.List(ctx, list); err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting
		}
		return len(list.Items) == 0, nil
	})
	return violations
}

// injectAfter runs f after delay, while the phase goes on.
func (s *suite) injectAfter(t *testing.T, f fault, delay time.Duration) {
	t.Helper()
	<-time.After(delay)
	f.inject(t, s)
}

// waitRunning waits until want pods of the namespace are Running and
// ready, and no other pod is left.
func (s *suite) waitRunning(t *testing.T, want int, phase string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &corev1.PodList{}
		if err := s.cluster.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return false, nil //nolint:nilerr // the API server may be restarting
		}
		running := 0
		for i := range list.Items {
			if list.Items[i].DeletionTimestamp == nil && podReady(&list.Items[i]) {
				running++
			}
		}
		return running == want && len(list.Items) == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d pods Running after %s: %v\n%s", want, phase, err, s.describe())
	}
}

// describe summarises the pods, NodeClaims and nodes, for a failure report.
func (s *suite) describe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	pods := &corev1.PodList{}
	if err := s.cluster.Client.List(ctx, pods, client.InNamespace(namespace)); err == nil {
		for _, p := range pods.Items {
			reason := ""
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
					reason = c.Reason + ": " + c.Message
				}
			}
			fmt.Fprintf(&b, "pod %s phase=%s node=%q nominated=%q deleting=%v %s\n", p.Name, p.Status.Phase, p.Spec.NodeName,
				p.Status.NominatedNodeName, p.DeletionTimestamp != nil, reason)
		}
	}
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err == nil {
		for _, nc := range claims.Items {
			var conditions []string
			for _, c := range nc.Status.Conditions {
				conditions = append(conditions, c.Type+"="+string(c.Status))
			}
			fmt.Fprintf(&b, "nodeclaim %s node=%q deleting=%v %s\n", nc.Name, nc.Status.NodeName, nc.DeletionTimestamp != nil, strings.Join(conditions, ","))
		}
	}
	nodes := &corev1.NodeList{}
	if err := s.cluster.Client.List(ctx, nodes); err == nil {
		for _, n := range nodes.Items {
			fmt.Fprintf(&b, "node %s taints=%v unschedulable=%v\n", n.Name, n.Spec.Taints, n.Spec.Unschedulable)
		}
	}
	return b.String()
}

// settle waits until the number of NodeClaims has not changed for 10s, so
// that a late duplicate launch is counted.
func (s *suite) settle(t *testing.T, phase string) {
	t.Helper()
	last, since := -1, time.Now()
	env.Eventually(t, 3*time.Minute, "NodeClaims to settle after "+phase, func(ctx context.Context) (bool, error) {
		n := s.claims.created()
		if n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= 10*time.Second, nil
	})
}

// checkClaimsAndNodes checks, allowing garbage collection and liveness
// their time, that every NodeClaim has its Node and every Node its
// NodeClaim.
func (s *suite) checkClaimsAndNodes(t *testing.T, i int, phase string) int {
	t.Helper()
	var problem string
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for ctx.Err() == nil {
		problem = s.claimNodeMismatch(ctx)
		if problem == "" {
			return 0
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	t.Errorf("iteration %d, after %s: %s", i, phase, problem)
	return 1
}

// claimNodeMismatch describes the first NodeClaim without a Node or Node
// without a NodeClaim, or returns "".
func (s *suite) claimNodeMismatch(ctx context.Context) string {
	claims := &v1.NodeClaimList{}
	nodes := &corev1.NodeList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return fmt.Sprintf("listing NodeClaims: %v", err)
	}
	if err := s.cluster.Client.List(ctx, nodes); err != nil {
		return fmt.Sprintf("listing nodes: %v", err)
	}
	byProviderID := map[string]bool{}
	for _, nc := range claims.Items {
		byProviderID[nc.Status.ProviderID] = true
	}
	nodeIDs := map[string]bool{}
	for _, n := range nodes.Items {
		nodeIDs[n.Spec.ProviderID] = true
		if n.Labels[v1.NodePoolLabelKey] != "" && !byProviderID[n.Spec.ProviderID] {
			return fmt.Sprintf("node %s (%s) has no NodeClaim", n.Name, n.Spec.ProviderID)
		}
	}
	for _, nc := range claims.Items {
		if nc.Status.ProviderID == "" || !nodeIDs[nc.Status.ProviderID] {
			return fmt.Sprintf("NodeClaim %s (provider ID %q) has no node", nc.Name, nc.Status.ProviderID)
		}
	}
	return ""
}

// deployment makes a Deployment of n pods with cpu requests; spread pods
// repel each other, one per node.
func deployment(name string, n int32, cpu string, spread bool) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")},
		}}},
	}
	if spread {
		spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
			}},
		}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// startController runs the controller; its log is appended to across
// restarts and kept in the control plane's log directory.
func (s *suite) startController(t *testing.T) *controllerprocess.Process {
	t.Helper()
	s.restarts++
	return controllerprocess.Start(t, s.binary, s.cluster.ControlPlane.KubeconfigPath, filepath.Join(s.cluster.ControlPlane.LogDir, "dovetail.log"),
		"--leader-elect=false", "--metrics-port=0", "--health-probe-port=0", "--disruption-validation-delay=2s")
}
