package interruption_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// Tags the AWS provider puts on what it launches.
const (
	tagNodePool  = "karpenter.sh/nodepool"
	tagNodeClaim = "karpenter.sh/nodeclaim"
	tagNodeClass = "karpenter.k8s.aws/ec2nodeclass"
)

// callCounter serves the local AWS endpoint and counts its requests by
// "service:Action" (awsQuery Action, awsJson X-Amz-Target operation, or
// EKS method and path).
type callCounter struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

func newCallCounter(next http.Handler) *callCounter {
	return &callCounter{next: next, n: map[string]int{}}
}

func (c *callCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := actionOf(r)
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

// snapshot returns the counts so far.
func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// since returns the counts served after the snapshot before.
func (c *callCounter) since(before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range c.snapshot() {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// actionOf names a request's service and action; the body it reads is put back.
func actionOf(r *http.Request) string {
	service := "unknown"
	if auth := r.Header.Get("Authorization"); auth != "" {
		if _, cred, ok := strings.Cut(auth, "Credential="); ok {
			parts := strings.Split(strings.SplitN(cred, ",", 2)[0], "/")
			if len(parts) >= 4 {
				service = parts[3]
			}
		}
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		_, op, _ := strings.Cut(target, ".")
		return service + ":" + op
	}
	if r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
				return service + ":" + form.Get("Action")
			}
		}
	}
	return service + ":" + r.Method + " " + r.URL.Path
}

// suite is what one test runs and cleans up: its controller, namespaces,
// NodePools and EC2NodeClasses.
type suite struct {
	t          *testing.T
	mu         sync.Mutex
	controller *localcluster.Controller
	metrics    int
	pools      []string
	classes    []string
	namespaces []string
	configure  []func(*operator.Options)
	logs       *failureLog
}

// maxLog is how much of the controller's log a failed test (or any test
// with INTERRUPTION_E2E_LOG set) prints.
const maxLog = 64 << 10

// failureLog keeps the controllers' log, printed only when the test fails
// (a passing run stays readable).
type failureLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 4*maxLog {
		l.buf = append([]byte(nil), l.buf[len(l.buf)-maxLog:]...)
	}
	return len(p), nil
}

func (l *failureLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf[max(0, len(l.buf)-maxLog):])
}

// begin runs a controller for the test and, when the test ends, whatever
// happened, deletes what the test created, waits until the nodes, claims
// and instances of its NodePools are gone, and stops the controller.
func begin(t *testing.T, configure ...func(*operator.Options)) *suite {
	t.Helper()
	s := &suite{t: t, configure: configure, logs: &failureLog{}}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("INTERRUPTION_E2E_LOG") != "" {
			t.Logf("controller log (last %d bytes):\n%s", maxLog, s.logs.tail())
		}
	})
	s.controller = s.run()
	t.Cleanup(s.teardown)
	return s
}

// run starts a controller (fast batching, metrics on a free port).
func (s *suite) run() *localcluster.Controller {
	s.t.Helper()
	opts := localcluster.AWSOperatorOptions()
	opts.BatchIdleDuration = 500 * time.Millisecond
	opts.BatchMaxDuration = 3 * time.Second
	opts.DisruptionValidationDelay = time.Second
	opts.LogWriter = s.logs
	// Several controllers run in this process over the package's life and
	// the conversion webhook's certificate rotator registers a controller
	// under a fixed name; conversion has its own tests.
	opts.DisableWebhook = true
	opts.MetricsPort = freePort(s.t)
	for _, c := range s.configure {
		c(&opts)
	}
	settings := cluster.AWSSettings()
	settings.EndpointURL = endpointURL
	controller, err := cluster.StartAWSController(context.Background(), opts, settings)
	if err != nil {
		s.t.Fatalf("starting the Dovetail controller (AWS provider): %v", err)
	}
	s.mu.Lock()
	s.metrics = opts.MetricsPort
	s.mu.Unlock()
	return controller
}

// stopController stops the running controller (nil afterwards).
func (s *suite) stopController() {
	s.mu.Lock()
	c := s.controller
	s.controller = nil
	s.mu.Unlock()
	if c == nil {
		return
	}
	if err := stop(c); err != nil {
		s.t.Errorf("the controller stopped with error: %v", err)
	}
}

// startController starts a new controller after stopController.
func (s *suite) startController() {
	c := s.run()
	s.mu.Lock()
	s.controller = c
	s.mu.Unlock()
}

// stop stops a controller; one that hangs dumps the goroutines while it still hangs.
func stop(controller *localcluster.Controller) error {
	timer := time.AfterFunc(20*time.Second, func() { _ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1) })
	defer timer.Stop()
	return controller.Stop()
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// namespace creates a namespace for the test; teardown deletes it.
func (s *suite) namespace() string {
	s.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-interruption-"}}
	create(s.t, ns)
	s.namespaces = append(s.namespaces, ns.Name)
	return ns.Name
}

// pool creates a NodePool; teardown deletes it and waits for its nodes.
func (s *suite) pool(np *v1.NodePool) *v1.NodePool {
	s.t.Helper()
	s.pools = append(s.pools, np.Name)
	create(s.t, np)
	return np
}

// class creates an EC2NodeClass; teardown deletes it and waits until it is gone.
func (s *suite) class(nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	s.t.Helper()
	s.classes = append(s.classes, nc.Name)
	create(s.t, nc)
	return nc
}

func (s *suite) teardown() {
	t := s.t
	ctx := context.Background()
	defer s.stopController()
	if s.controller == nil {
		// A test that stopped its controller and failed before starting a new
		// one still needs one to drain and finalize what it launched.
		s.startController()
	}
	for _, ns := range s.namespaces {
		_ = cluster.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	env.Eventually(t, 3*time.Minute, "the test's pods to be gone", func(ctx context.Context) (bool, error) {
		for _, ns := range s.namespaces {
			pods := &corev1.PodList{}
			if err := cluster.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
				return false, err
			}
			if len(pods.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	for _, name := range s.pools {
		_ = cluster.Client.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	env.Eventually(t, 3*time.Minute, fmt.Sprintf("the NodeClaims, Nodes and instances of NodePools %v to be gone", s.pools),
		func(ctx context.Context) (bool, error) {
			claims := &v1.NodeClaimList{}
			if err := cluster.Client.List(ctx, claims); err != nil {
				return false, err
			}
			for i := range claims.Items {
				if slices.Contains(s.pools, claims.Items[i].Labels[v1.NodePoolLabelKey]) {
					_ = cluster.Client.Delete(ctx, &claims.Items[i])
					return false, nil
				}
			}
			nodes := &corev1.NodeList{}
			if err := cluster.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
				return false, err
			}
			for _, n := range nodes.Items {
				if slices.Contains(s.pools, n.Labels[v1.NodePoolLabelKey]) {
					return false, nil
				}
			}
			return len(liveInstances(s.pools...)) == 0, nil
		})
	for _, name := range s.classes {
		_ = cluster.Client.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	env.Eventually(t, 2*time.Minute, fmt.Sprintf("EC2NodeClasses %v to be finalized", s.classes), func(ctx context.Context) (bool, error) {
		for _, name := range s.classes {
			err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, &awsv1.EC2NodeClass{})
			if err == nil {
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		return true, nil
	})
}

// liveInstances lists the pending or running instances launched for the
// NodePools (any NodePool when none is given).
func liveInstances(pools ...string) []ec2.Instance {
	var out []ec2.Instance
	for _, inst := range cluster.AWS.EC2().Instances() {
		if inst.State != ec2.StatePending && inst.State != ec2.StateRunning {
			continue
		}
		pool, ok := inst.Tags[tagNodePool]
		if !ok || (len(pools) > 0 && !slices.Contains(pools, pool)) {
			continue
		}
		out = append(out, inst)
	}
	return out
}

// awsPool is the v1 document's NodePool (DefaultAWSNodePool) renamed, on
// the given EC2NodeClass, for pods that select it by name.
func awsPool(name, class string) *v1.NodePool {
	np := localcluster.DefaultAWSNodePool()
	np.Name = name
	np.Spec.Template.Spec.NodeClassRef.Name = class
	np.Spec.Weight = nil
	return np
}

// withRequirement adds a requirement to the pool's template.
func withRequirement(np *v1.NodePool, key string, op corev1.NodeSelectorOperator, minValues *int, values ...string) *v1.NodePool {
	np.Spec.Template.Spec.Requirements = append(np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values, MinValues: minValues})
	return np
}

// deployment returns a Deployment of pause pods requesting cpu and memory,
// pinned to a NodePool.
func deployment(ns, name, pool string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{v1.NodePoolLabelKey: pool},
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers: []corev1.Container{{
						Name: "pause", Image: env.PauseImage,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory),
						}},
					}},
				},
			},
		},
	}
}

// oneNodeEach gives each of the Deployment's pods a node of its own.
func oneNodeEach(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey:   corev1.LabelHostname,
			LabelSelector: &metav1.LabelSelector{MatchLabels: d.Spec.Selector.MatchLabels},
		}},
	}}
	return d
}

// runningPods lists the app's Running pods that are not being deleted.
func runningPods(ctx context.Context, ns, app string) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := cluster.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	var running []corev1.Pod
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			running = append(running, p)
		}
	}
	return running, nil
}

// waitRunning waits until n pods of the app are Running.
func waitRunning(t *testing.T, ns, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	env.Eventually(t, timeout, fmt.Sprintf("%d %s pods Running", n, app), func(ctx context.Context) (bool, error) {
		var err error
		pods, err = runningPods(ctx, ns, app)
		return len(pods) == n, err
	})
	return pods
}

// nodesOf returns the nodes the pods run on, by name.
func nodesOf(t *testing.T, pods []corev1.Pod) map[string]*corev1.Node {
	t.Helper()
	out := map[string]*corev1.Node{}
	for _, p := range pods {
		if _, ok := out[p.Spec.NodeName]; ok {
			continue
		}
		node := &corev1.Node{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
			t.Fatalf("reading node %s: %v", p.Spec.NodeName, err)
		}
		out[node.Name] = node
	}
	return out
}

// poolClaims lists the NodePool's NodeClaims.
func poolClaims(t *testing.T, pool string) []v1.NodeClaim {
	t.Helper()
	list := &v1.NodeClaimList{}
	if err := cluster.Client.List(context.Background(), list, client.MatchingLabels{v1.NodePoolLabelKey: pool}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// claimOfNode returns the NodeClaim whose status names the node.
func claimOfNode(t *testing.T, pool, node string) *v1.NodeClaim {
	t.Helper()
	for _, nc := range poolClaims(t, pool) {
		if nc.Status.NodeName == node {
			return &nc
		}
	}
	t.Fatalf("no NodeClaim of pool %s names node %s", pool, node)
	return nil
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := cluster.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", env.Describe(obj), err)
	}
}

// instanceIDOf returns the instance id of an aws:///<zone>/<id> provider ID.
func instanceIDOf(providerID string) string {
	i := strings.LastIndex(providerID, "/")
	if i < 0 {
		return ""
	}
	return providerID[i+1:]
}

// waitClassReady waits until the EC2NodeClass is Ready and returns it.
func waitClassReady(t *testing.T, name string, timeout time.Duration) *awsv1.EC2NodeClass {
	t.Helper()
	nc := &awsv1.EC2NodeClass{}
	env.Eventually(t, timeout, "EC2NodeClass "+name+" to be Ready", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeReady), nil
	})
	return nc
}

// seed is the endpoint's seeded account.
func seed() localaws.Seed { return cluster.AWS.Seed() }
