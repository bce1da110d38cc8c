package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/clock"
)

// ServiceClusterIPRange is the API server's --service-cluster-ip-range, the
// cluster's service IPv4 CIDR. It is 10.100.0.0/16, the range EKS picks
// when the VPC is in 10.0.0.0/8, so that it does not overlap the local AWS
// endpoint's seeded VPC (10.0.0.0/16): EKS refuses a service range that
// overlaps the VPC
// (https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html).
const ServiceClusterIPRange = "10.100.0.0/16"

// KubernetesServiceIP is the ClusterIP of the default/kubernetes Service,
// the first address of ServiceClusterIPRange; the API server's serving
// certificate names it.
const KubernetesServiceIP = "10.100.0.1"

// ControlPlane is a running local control plane.
type ControlPlane struct {
	opts Options

	// KubeconfigPath is the admin kubeconfig (client certificate of group system:masters).
	KubeconfigPath string
	// RESTConfig authenticates as that admin.
	RESTConfig *rest.Config
	// LogDir holds one log file per component.
	LogDir string

	mu        sync.Mutex
	processes []*process
	stopped   bool
	tempDir   bool
}

// ports of one control plane.
type ports struct {
	etcdClient, etcdPeer, apiserver, controllerManager, scheduler, kwok int
}

// Start starts the components of opts.Profile and waits until each is ready.
// On error it stops whatever it started. The caller must call Stop.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	if err := opts.complete(); err != nil {
		return nil, err
	}
	// A port found free can still be taken by another process before the
	// component binds it; with a fresh work directory, start again on
	// other ports.
	for attempt := 1; ; attempt++ {
		cp := &ControlPlane{opts: opts}
		err := cp.start(ctx)
		if err == nil {
			return cp, nil
		}
		if stopErr := cp.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if attempt == maxStartAttempts || opts.WorkDir != "" || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

// maxStartAttempts bounds the restarts after a port was taken under us.
const maxStartAttempts = 3

func (cp *ControlPlane) start(ctx context.Context) error {
	if cp.opts.WorkDir == "" {
		dir, err := os.MkdirTemp("", "dovetail-controlplane-")
		if err != nil {
			return fmt.Errorf("creating work directory: %w", err)
		}
		cp.opts.WorkDir, cp.tempDir = dir, true
	} else if err := os.MkdirAll(cp.opts.WorkDir, 0o700); err != nil {
		return fmt.Errorf("creating work directory: %w", err)
	}
	cp.LogDir = filepath.Join(cp.opts.WorkDir, "logs")
	if err := os.MkdirAll(cp.LogDir, 0o700); err != nil {
		return fmt.Errorf("creating log directory: %w", err)
	}
	p, err := cp.allocatePorts()
	if err != nil {
		return err
	}
	pki, err := generatePKI(filepath.Join(cp.opts.WorkDir, "pki"), clock.RealClock{}.Now(), 365*24*time.Hour)
	if err != nil {
		return err
	}

	if err := cp.startEtcd(ctx, p); err != nil {
		return err
	}
	if err := cp.startAPIServer(ctx, p, pki); err != nil {
		return err
	}
	if cp.opts.Profile != ProfileFull {
		return nil
	}
	// The scheduler, controller manager and kwok only need the apiserver, so
	// start them together and then wait for each.
	starts := []func() (*process, string, error){
		func() (*process, string, error) { return cp.startControllerManager(p, pki) },
		func() (*process, string, error) { return cp.startScheduler(p) },
		func() (*process, string, error) { return cp.startKwok(p) },
	}
	type pending struct {
		proc *process
		url  string
	}
	var waits []pending
	for _, start := range starts {
		proc, url, err := start()
		if err != nil {
			return err
		}
		waits = append(waits, pending{proc, url})
	}
	for _, w := range waits {
		if err := cp.waitHTTP(ctx, w.proc, w.url); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) allocatePorts() (ports, error) {
	var p ports
	if cp.opts.APIServerPort != 0 {
		if err := checkPortFree(cp.opts.APIServerPort); err != nil {
			return p, fmt.Errorf("apiserver %w", err)
		}
		p.apiserver = cp.opts.APIServerPort
	}
	for _, port := range []*int{&p.etcdClient, &p.etcdPeer, &p.apiserver, &p.controllerManager, &p.scheduler, &p.kwok} {
		if *port != 0 {
			continue
		}
		free, err := freePort()
		if err != nil {
			return p, err
		}
		*port = free
	}
	return p, nil
}

func (cp *ControlPlane) binary(name string) string { return filepath.Join(cp.opts.BinDir, name) }

func (cp *ControlPlane) launch(name string, args []string) (*process, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.stopped {
		return nil, fmt.Errorf("starting %s: control plane is stopped", name)
	}
	proc, err := startProcess(name, cp.binary(name), args, cp.LogDir)
	if err != nil {
		return nil, err
	}
	cp.processes = append(cp.processes, proc)
	return proc, nil
}

func (cp *ControlPlane) startEtcd(ctx context.Context, p ports) error {
	client := "http://127.0.0.1:" + strconv.Itoa(p.etcdClient)
	peer := "http://127.0.0.1:" + strconv.Itoa(p.etcdPeer)
	proc, err := cp.launch(BinaryEtcd, []string{
		"--name=dovetail",
		"--data-dir=" + filepath.Join(cp.opts.WorkDir, "etcd"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=dovetail=" + peer,
		// A throwaway cluster: durability is not needed, speed is.
		"--unsafe-no-fsync",
		"--log-level=warn",
	})
	if err != nil {
		return err
	}
	return cp.waitReady(ctx, proc)
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, p ports, pki *pki) error {
	proc, err := cp.launch(BinaryKubeAPIServer, []string{
		"--etcd-servers=http://127.0.0.1:" + strconv.Itoa(p.etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.apiserver),
		"--cert-dir=" + filepath.Join(cp.opts.WorkDir, "apiserver"),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--service-account-key-file=" + pki.saPublic,
		"--service-account-signing-key-file=" + pki.saPrivate,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--authorization-mode=RBAC",
		// Simulated nodes run no kubelet, so pods need no service-account token.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		"--profiling=false",
		"--v=1",
	})
	if err != nil {
		return err
	}
	cp.RESTConfig = &rest.Config{
		Host: "https://127.0.0.1:" + strconv.Itoa(p.apiserver),
		TLSClientConfig: rest.TLSClientConfig{
			CAData: pki.caPEM, CertData: pki.adminCertPEM, KeyData: pki.adminKeyPEM,
		},
		QPS:   200,
		Burst: 400,
	}
	cp.KubeconfigPath = filepath.Join(cp.opts.WorkDir, "kubeconfig")
	if err := writeKubeconfig(cp.KubeconfigPath, cp.RESTConfig); err != nil {
		return err
	}
	return cp.waitReady(ctx, proc)
}

// waitAPIServer polls the kube-apiserver's /readyz until it answers ok.
func (cp *ControlPlane) waitAPIServer(ctx context.Context, proc *process) error {
	clientset, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		return fmt.Errorf("creating apiserver client: %w", err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cp.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		if err := proc.exitErr(); err != nil {
			return false, err
		}
		body, err := clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for kube-apiserver to be ready: %w; last log lines:\n%s", err, proc.logTail(20))
	}
	return nil
}

// waitReady waits until a component started by this control plane serves:
// etcd's /health or the kube-apiserver's /readyz; the others are checked
// by their callers.
func (cp *ControlPlane) waitReady(ctx context.Context, proc *process) error {
	switch proc.name {
	case BinaryEtcd:
		return cp.waitHTTP(ctx, proc, flagValue(proc.args, "--advertise-client-urls")+"/health")
	case BinaryKubeAPIServer:
		return cp.waitAPIServer(ctx, proc)
	default:
		return nil
	}
}

// flagValue returns the last value given to a --name=value flag.
func flagValue(args []string, name string) string {
	value := ""
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			value = v
		}
	}
	return value
}

// Restart stops the named component (etcd, kube-apiserver, ...) and starts
// it again with the same arguments plus extraArgs (a flag given again takes
// the later value), then waits until etcd or the kube-apiserver serves
// again. Chaos tests use it to restart the API server under a running
// controller, or to restart it with tight request limits.
func (cp *ControlPlane) Restart(ctx context.Context, name string, extraArgs ...string) error {
	cp.mu.Lock()
	index := -1
	for i, p := range cp.processes {
		if p.name == name {
			index = i
		}
	}
	stopped := cp.stopped
	var old *process
	if index >= 0 {
		old = cp.processes[index]
	}
	cp.mu.Unlock()
	if stopped {
		return fmt.Errorf("restarting %s: control plane is stopped", name)
	}
	if old == nil {
		return fmt.Errorf("restarting %s: no such component", name)
	}
	if err := old.stop(cp.opts.StopGracePeriod); err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	args := append(append([]string(nil), old.args...), extraArgs...)
	proc, err := startProcess(name, old.binary, args, cp.LogDir)
	if err != nil {
		return fmt.Errorf("restarting %s: %w", name, err)
	}
	cp.mu.Lock()
	cp.processes[index] = proc
	cp.mu.Unlock()
	return cp.waitReady(ctx, proc)
}

func (cp *ControlPlane) startControllerManager(p ports, pki *pki) (*process, string, error) {
	proc, err := cp.launch(BinaryKubeControllerManager, []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.controllerManager),
		"--cert-dir=" + filepath.Join(cp.opts.WorkDir, "kube-controller-manager"),
		"--leader-elect=false",
		"--service-account-private-key-file=" + pki.saPrivate,
		"--root-ca-file=" + pki.caCert,
		"--use-service-account-credentials=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
		"--v=1",
	})
	if err != nil {
		return nil, "", err
	}
	return proc, "https://127.0.0.1:" + strconv.Itoa(p.controllerManager) + "/healthz", nil
}

func (cp *ControlPlane) startScheduler(p ports) (*process, string, error) {
	config := filepath.Join(cp.opts.WorkDir, "kube-scheduler.yaml")
	content := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`, cp.KubeconfigPath)
	if err := os.WriteFile(config, []byte(content), 0o600); err != nil {
		return nil, "", fmt.Errorf("writing kube-scheduler configuration: %w", err)
	}
	proc, err := cp.launch(BinaryKubeScheduler, []string{
		"--config=" + config,
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.scheduler),
		"--cert-dir=" + filepath.Join(cp.opts.WorkDir, "kube-scheduler"),
		"--v=1",
	})
	if err != nil {
		return nil, "", err
	}
	return proc, "https://127.0.0.1:" + strconv.Itoa(p.scheduler) + "/healthz", nil
}

// kwokConfiguration raises kwok's workers from their defaults (4 for node
// stages, pod stages and leases, 1 for the pods-on-node sync): each kwok
// worker plays the kubelet of whichever node or pod comes next, so with
// the defaults a scale-out's nodes became Ready one after another (3-14 s
// after their claims, at 68 nodes) and its pods started about 4 at a time,
// where real kubelets each work on their own node at once.
const kwokConfiguration = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  nodePlayStageParallelism: 32
  podPlayStageParallelism: 32
  nodeLeaseParallelism: 16
  podsOnNodeSyncParallelism: 8
`

func (cp *ControlPlane) startKwok(p ports) (*process, string, error) {
	address := "127.0.0.1:" + strconv.Itoa(p.kwok)
	config := filepath.Join(cp.opts.WorkDir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(kwokConfiguration), 0o600); err != nil {
		return nil, "", fmt.Errorf("writing kwok configuration: %w", err)
	}
	proc, err := cp.launch(BinaryKwok, []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--config=" + cp.binary(KwokStagesFile),
		"--config=" + config,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotationKey + "=" + KwokNodeAnnotationValue,
		"--node-lease-duration-seconds=40",
		"--cidr=10.128.0.0/9",
		"--node-ip=10.0.255.254",
		"--server-address=" + address,
	})
	if err != nil {
		return nil, "", err
	}
	return proc, "http://" + address + "/healthz", nil
}

// waitHTTP polls url until it answers 200, failing fast if proc exits.
func (cp *ControlPlane) waitHTTP(ctx context.Context, proc *process, url string) error {
	client := &http.Client{
		Timeout: 2 * time.Second,
		// The components serve self-signed certificates on loopback; only
		// liveness is checked here.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // G402: loopback health check of a self-signed local component
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, cp.opts.StartTimeout, true, func(ctx context.Context) (bool, error) {
		if err := proc.exitErr(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, fmt.Errorf("building health request: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be ready at %s: %w; last log lines:\n%s", proc.name, url, err, proc.logTail(20))
	}
	return nil
}

// Stop stops every component (in reverse start order) and removes the work
// directory unless KeepWorkDir was set. It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	cp.mu.Lock()
	if cp.stopped {
		cp.mu.Unlock()
		return nil
	}
	cp.stopped = true
	procs := cp.processes
	cp.mu.Unlock()

	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(cp.opts.StopGracePeriod); err != nil {
			errs = append(errs, err)
		}
	}
	if cp.opts.WorkDir != "" && !cp.opts.KeepWorkDir && len(errs) == 0 {
		if err := os.RemoveAll(cp.opts.WorkDir); err != nil {
			errs = append(errs, fmt.Errorf("removing work directory: %w", err))
		}
	}
	return errors.Join(errs...)
}

// WorkDir is where the control plane keeps its data, certificates and logs.
func (cp *ControlPlane) WorkDir() string { return cp.opts.WorkDir }

// Profile is the profile the control plane runs.
func (cp *ControlPlane) Profile() Profile { return cp.opts.Profile }

// Running reports an error if any component has exited.
func (cp *ControlPlane) Running() error {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	var errs []error
	for _, p := range cp.processes {
		if err := p.exitErr(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeKubeconfig writes an admin kubeconfig for config.
func writeKubeconfig(path string, config *rest.Config) error {
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["dovetail"] = &clientcmdapi.Cluster{Server: config.Host, CertificateAuthorityData: config.CAData}
	kubeconfig.AuthInfos["dovetail-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: config.CertData, ClientKeyData: config.KeyData}
	kubeconfig.Contexts["dovetail"] = &clientcmdapi.Context{Cluster: "dovetail", AuthInfo: "dovetail-admin"}
	kubeconfig.CurrentContext = "dovetail"
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// PIDs returns the process id of each component started so far, by binary
// name, for diagnostics and for tests that prove nothing outlives Stop.
func (cp *ControlPlane) PIDs() map[string]int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	pids := make(map[string]int, len(cp.processes))
	for _, p := range cp.processes {
		pids[p.name] = p.cmd.Process.Pid
	}
	return pids
}
