package awse2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// Suite is what one test runs and cleans up: its controller, namespaces,
// NodePools and EC2NodeClasses.
type Suite struct {
	t       testing.TB
	cluster *Cluster
	mu      sync.Mutex
	// controller runs in-process (Begin), process as its own (BeginProcess);
	// at most one of them is set.
	controller *localcluster.Controller
	process    *controllerprocess.Process
	// processLog is the file the process controllers append to; "" for
	// in-process ones.
	processLog string
	metrics    int
	pools      []string
	classes    []string
	namespaces []string
	configure  []func(*operator.Options)
	logs       *failureLog
}

// MaxLog is how much of the controller's log a failed test (or any test,
// with Options.LogOnSuccess) prints.
const MaxLog = 64 << 10

// failureLog keeps the controllers' log, printed only when the test fails
// (a passing run stays readable) unless Options.LogOnSuccess is set.
type failureLog struct {
	mu  sync.Mutex
	buf []byte
}

func (l *failureLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 4*MaxLog {
		l.buf = append([]byte(nil), l.buf[len(l.buf)-MaxLog:]...)
	}
	return len(p), nil
}

func (l *failureLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf[max(0, len(l.buf)-MaxLog):])
}

// Begin runs a controller for the test (configure adjusts its options)
// and, when the test ends, whatever happened, deletes what the test
// created, waits until the nodes, claims and instances of its NodePools
// are gone, and stops the controller.
func (c *Cluster) Begin(t testing.TB, configure ...func(*operator.Options)) *Suite {
	t.Helper()
	s := &Suite{t: t, cluster: c, configure: configure, logs: &failureLog{}}
	t.Cleanup(func() {
		if t.Failed() || c.opts.LogOnSuccess {
			t.Logf("controller log (last %d bytes):\n%s", MaxLog, s.logs.tail())
		}
	})
	s.controller = s.run()
	t.Cleanup(s.teardown)
	return s
}

// BeginProcess is Begin with the controller run as its own process, the
// `dovetail controller --cloud-provider aws` binary of this checkout (built
// once per package), configured as Begin configures the in-process one, so
// that the test can SIGKILL it (KillController) as the OOM killer or a lost
// node would. Its log is kept in a file and printed as Begin prints it.
func (c *Cluster) BeginProcess(t testing.TB) *Suite {
	t.Helper()
	bin, err := c.controllerBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Before the cleanups below, so that the log is still there for them.
	logPath := filepath.Join(t.TempDir(), "controller.log")
	s := &Suite{t: t, cluster: c, processLog: logPath, logs: &failureLog{}}
	t.Cleanup(func() {
		if t.Failed() || c.opts.LogOnSuccess {
			data, _ := os.ReadFile(logPath)
			t.Logf("controller process log (last %d bytes):\n%s", MaxLog, data[max(0, len(data)-MaxLog):])
		}
	})
	s.process = s.runProcess(bin)
	t.Cleanup(s.teardown)
	return s
}

// controllerBinary builds the dovetail binary once for the package.
func (c *Cluster) controllerBinary() (string, error) {
	c.binaryOnce.Do(func() {
		c.binary, c.binaryErr = controllerprocess.BuildBinary(c.workDir)
	})
	return c.binary, c.binaryErr
}

// runProcess starts a controller process with the flags run gives the
// in-process one, talking to the endpoint through the counting front.
func (s *Suite) runProcess(bin string) *controllerprocess.Process {
	s.t.Helper()
	port := freePort(s.t)
	settings := s.cluster.AWSSettings()
	args := []string{
		"controller", "--cloud-provider=aws",
		"--kubeconfig=" + s.cluster.ControlPlane.KubeconfigPath,
		"--cluster-name=" + settings.ClusterName,
		"--aws-region=" + settings.Region,
		"--aws-endpoint-url=" + s.cluster.EndpointURL,
		"--interruption-queue=" + settings.InterruptionQueue,
		"--leader-elect=false", "--disable-webhook",
		"--metrics-port=" + strconv.Itoa(port), "--health-probe-port=0",
		"--log-format=console",
		"--batch-idle-duration=500ms", "--batch-max-duration=3s", "--disruption-validation-delay=1s",
	}
	environ := []string{
		"HOME=" + s.t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"AWS_ACCESS_KEY_ID=" + localaws.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + localaws.SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED=true",
	}
	f, err := os.OpenFile(s.processLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		_, err = fmt.Fprintf(f, "=== %s %s\n", clock.RealClock{}.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
		_ = f.Close()
	}
	if err != nil {
		s.t.Fatal(err)
	}
	p := controllerprocess.StartEnv(s.t, bin, environ, s.processLog, args...)
	s.mu.Lock()
	s.metrics = port
	s.mu.Unlock()
	return p
}

// run starts a controller (fast batching, metrics on a free port).
func (s *Suite) run() *localcluster.Controller {
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
	settings := s.cluster.AWSSettings()
	settings.EndpointURL = s.cluster.EndpointURL
	controller, err := s.cluster.StartAWSController(context.Background(), opts, settings)
	if err != nil {
		s.t.Fatalf("starting the Dovetail controller (AWS provider): %v", err)
	}
	s.mu.Lock()
	s.metrics = opts.MetricsPort
	s.mu.Unlock()
	return controller
}

// StopController stops the running controller (none runs afterwards): an
// in-process one is cancelled, a process gets SIGTERM (and SIGKILL if it
// has not exited controllerprocess.StopGrace later, which fails the test).
func (s *Suite) StopController() {
	s.mu.Lock()
	c, p := s.controller, s.process
	s.controller, s.process = nil, nil
	s.mu.Unlock()
	if p != nil && p.Stop().Killed {
		s.t.Errorf("the controller process did not stop within %v of SIGTERM", controllerprocess.StopGrace)
	}
	if c == nil {
		return
	}
	if err := stop(c); err != nil {
		s.t.Errorf("the controller stopped with error: %v", err)
	}
}

// KillController SIGKILLs the controller process of a BeginProcess suite
// and waits until it is gone (none runs afterwards): no graceful shutdown,
// whatever it was doing is cut off.
func (s *Suite) KillController() {
	s.t.Helper()
	s.mu.Lock()
	p := s.process
	s.process = nil
	s.mu.Unlock()
	if p == nil {
		s.t.Fatal("KillController: no controller process runs (the suite was not begun with BeginProcess, or it was stopped)")
	}
	p.Kill(s.t)
}

// StartController starts a new controller, of the suite's kind, after
// StopController or KillController.
func (s *Suite) StartController() {
	if s.processLog != "" {
		bin, err := s.cluster.controllerBinary()
		if err != nil {
			s.t.Fatal(err)
		}
		p := s.runProcess(bin)
		s.mu.Lock()
		s.process = p
		s.mu.Unlock()
		return
	}
	c := s.run()
	s.mu.Lock()
	s.controller = c
	s.mu.Unlock()
}

// running reports whether a controller runs.
func (s *Suite) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.controller != nil || s.process != nil
}

// stop stops a controller; one that hangs dumps the goroutines while it still hangs.
func stop(controller *localcluster.Controller) error {
	timer := time.AfterFunc(20*time.Second, func() { _ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1) })
	defer timer.Stop()
	return controller.Stop()
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Namespace creates a namespace for the test; teardown deletes it.
func (s *Suite) Namespace() string {
	s.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: s.cluster.opts.NamespacePrefix}}
	s.cluster.Create(s.t, ns)
	s.namespaces = append(s.namespaces, ns.Name)
	return ns.Name
}

// Pool creates a NodePool; teardown deletes it and waits for its nodes.
func (s *Suite) Pool(np *v1.NodePool) *v1.NodePool {
	s.t.Helper()
	s.pools = append(s.pools, np.Name)
	s.cluster.Create(s.t, np)
	return np
}

// Class creates an EC2NodeClass; teardown deletes it and waits until it is gone.
func (s *Suite) Class(nc *awsv1.EC2NodeClass) *awsv1.EC2NodeClass {
	s.t.Helper()
	s.TrackClass(nc.Name)
	s.cluster.Create(s.t, nc)
	return nc
}

// TrackClass has teardown delete the EC2NodeClass of that name, which the
// test created itself, and wait until it is gone.
func (s *Suite) TrackClass(name string) {
	s.classes = append(s.classes, name)
}

func (s *Suite) teardown() {
	t := s.t
	c := s.cluster
	ctx := context.Background()
	defer s.StopController()
	if !s.running() {
		// A test that stopped its controller and failed before starting a new
		// one still needs one to drain and finalize what it launched.
		s.StartController()
	}
	for _, ns := range s.namespaces {
		_ = c.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	env.Eventually(t, 3*time.Minute, "the test's pods to be gone", func(ctx context.Context) (bool, error) {
		for _, ns := range s.namespaces {
			pods := &corev1.PodList{}
			if err := c.Client.List(ctx, pods, client.InNamespace(ns)); err != nil {
				return false, err
			}
			if len(pods.Items) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
	for _, name := range s.pools {
		_ = c.Client.Delete(ctx, &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	env.Eventually(t, 3*time.Minute, fmt.Sprintf("the NodeClaims, Nodes and instances of NodePools %v to be gone", s.pools),
		func(ctx context.Context) (bool, error) {
			claims := &v1.NodeClaimList{}
			if err := c.Client.List(ctx, claims); err != nil {
				return false, err
			}
			for i := range claims.Items {
				if slices.Contains(s.pools, claims.Items[i].Labels[v1.NodePoolLabelKey]) {
					_ = c.Client.Delete(ctx, &claims.Items[i])
					return false, nil
				}
			}
			nodes := &corev1.NodeList{}
			if err := c.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
				return false, err
			}
			for _, n := range nodes.Items {
				if slices.Contains(s.pools, n.Labels[v1.NodePoolLabelKey]) {
					return false, nil
				}
			}
			return len(c.LiveInstances(s.pools...)) == 0, nil
		})
	for _, name := range s.classes {
		_ = c.Client.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	env.Eventually(t, 2*time.Minute, fmt.Sprintf("EC2NodeClasses %v to be finalized", s.classes), func(ctx context.Context) (bool, error) {
		for _, name := range s.classes {
			err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &awsv1.EC2NodeClass{})
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

// Scrape returns the running controller's /metrics text; "" and no error
// while it is not serving yet.
func (s *Suite) Scrape(ctx context.Context) (string, error) {
	s.mu.Lock()
	port := s.metrics
	s.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil // not serving yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}
