package chart_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion/webhook"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/controllerprocess"
)

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount with a token from the TokenRequest API, as a pod's
// projected token would: what this identity may do is what its RBAC says.
func serviceAccountKubeconfig(t *testing.T, namespace, name string) string {
	t.Helper()
	token, err := clientset.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", namespace, name, err)
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.RESTConfig.Host, CertificateAuthorityData: cp.RESTConfig.CAData}
	config.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: name}
	config.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatalf("writing the ServiceAccount's kubeconfig: %v", err)
	}
	return path
}

// chartEnvironment is the controller container's environment as the
// installed release renders it, with the namespace field references and
// the memory limit (GOMEMLIMIT) resolved as the kubelet would.
func chartEnvironment(t *testing.T, release, namespace string) []corev1.EnvVar {
	t.Helper()
	manifest, err := helm(context.Background(), "get", "manifest", release, "--namespace", namespace)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range manifestObjects(t, manifest) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, d); err != nil {
			t.Fatalf("decoding the Deployment: %v", err)
		}
		container := d.Spec.Template.Spec.Containers[0]
		var out []corev1.EnvVar
		for _, e := range container.Env {
			switch {
			case e.ValueFrom == nil:
			case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				e = corev1.EnvVar{Name: e.Name, Value: namespace}
			case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
				// As the kubelet resolves it with the default divisor: bytes.
				limit := container.Resources.Limits[corev1.ResourceMemory]
				e = corev1.EnvVar{Name: e.Name, Value: strconv.FormatInt(limit.Value(), 10)}
			default:
				t.Fatalf("env %s: the test resolves only metadata.namespace and limits.memory references", e.Name)
			}
			out = append(out, e)
		}
		return out
	}
	t.Fatal("the release has no Deployment")
	return nil
}

// controller is a dovetail process run as the chart runs it.
type controller struct {
	*controllerprocess.Process
	metricsPort int
	logPath     string
}

// startController runs `dovetail controller` with the environment of the
// test's release (ports moved to free ones), authenticated by kubeconfig,
// until the test ends. certDir stands for the mounted webhook Secret.
func startController(t *testing.T, kubeconfig, certDir string) *controller {
	t.Helper()
	return startReleaseController(t, releaseName, releaseNS, kubeconfig, certDir)
}

// startReleaseController is startController for any installed release. At
// the end of the test it stops the process with SIGTERM, as the kubelet
// does, and fails the test if it had to be killed.
func startReleaseController(t *testing.T, release, namespace, kubeconfig, certDir string) *controller {
	t.Helper()
	ports := freePorts(t, 3)
	overrides := map[string]string{
		"METRICS_PORT": strconv.Itoa(ports[0]), "HEALTH_PROBE_PORT": strconv.Itoa(ports[1]),
		"WEBHOOK_PORT": strconv.Itoa(ports[2]), "WEBHOOK_CERT_DIR": certDir, "KUBECONFIG": kubeconfig,
	}
	environ := []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	for _, e := range chartEnvironment(t, release, namespace) {
		if _, ok := overrides[e.Name]; !ok {
			environ = append(environ, e.Name+"="+e.Value)
		}
	}
	for k, v := range overrides {
		environ = append(environ, k+"="+v)
	}
	logPath := filepath.Join(t.TempDir(), "controller.log")
	c := &controller{
		Process:     controllerprocess.StartEnv(t, dovetailBin, environ, logPath, "controller"),
		metricsPort: ports[0],
		logPath:     logPath,
	}
	t.Cleanup(func() {
		if c.Stop().Killed {
			t.Errorf("controller did not stop within %v of SIGTERM", controllerprocess.StopGrace)
		}
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("controller log (last 8 KiB):\n%s", tail(data, 8<<10))
		}
	})
	return c
}

// log returns what the controller has logged so far.
func (c *controller) log(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// scrape returns the controller's /metrics text.
func (c *controller) scrape(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort), nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return string(body), nil
}

// isLeader reports whether the controller holds the Lease, from
// controller-runtime's leader_election_master_status gauge.
func (c *controller) isLeader(ctx context.Context) (bool, error) {
	text, err := c.scrape(ctx)
	if err != nil {
		return false, err
	}
	scanner := bufio.NewScanner(strings.NewReader(text))
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, "leader_election_master_status{") && strings.Contains(line, `name="dovetail-leader-election"`) {
			return strings.HasSuffix(line, " 1"), nil
		}
	}
	return false, nil
}

// mountWebhookSecret plays the kubelet for the webhook certificate Secret:
// it writes the Secret's certificate and key into a directory whenever they
// change, until the test ends. The directory is returned.
func mountWebhookSecret(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var last string
		_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			secret, err := clientset.CoreV1().Secrets(releaseNS).Get(ctx, webhook.DefaultSecretName, metav1.GetOptions{})
			if err != nil || len(secret.Data[webhook.CertName]) == 0 || secret.ResourceVersion == last {
				return false, nil
			}
			for _, name := range []string{webhook.CertName, webhook.KeyName} {
				if err := os.WriteFile(filepath.Join(dir, name), secret.Data[name], 0o600); err != nil {
					return false, nil
				}
			}
			last = secret.ResourceVersion
			return false, nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return dir
}

// freePorts asks the kernel for n unused loopback ports.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var listeners []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	var errs []error
	for _, l := range listeners {
		errs = append(errs, l.Close())
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return ports
}

// tail returns at most the last n bytes of data.
func tail(data []byte, n int) []byte {
	if len(data) > n {
		return data[len(data)-n:]
	}
	return data
}
