package chart_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/testlog"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

// TestAWSProviderWithChartRBAC installs the controller chart a second time
// with cloudProvider aws (its own namespace, the webhook off: the first
// release serves it) and runs it as that release's ServiceAccount against
// the local AWS endpoint: the EC2NodeClass resolves, pending pods get EC2
// instances that join as nodes, and the API server refused nothing, so the
// AWS provider's generated rules (and the kube-system kube-dns Role) hold.
func TestAWSProviderWithChartRBAC(t *testing.T) {
	ctx := context.Background()
	const release, namespace, clusterName = "dovetail-aws", "dovetail-aws", "chart-test"
	// The endpoint gets the control plane's facts (endpoint, CA, service
	// CIDR, Kubernetes version) as dovetail up gives them.
	cfg, err := localcluster.EndpointConfig(cp, localaws.Config{ClusterName: clusterName, Kubernetes: kube, Logger: testlog.Logger(t, 0), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	endpoint, err := localaws.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting the local AWS endpoint: %v", err)
	}
	t.Cleanup(func() {
		if err := endpoint.Stop(); err != nil {
			t.Errorf("stopping the local AWS endpoint: %v", err)
		}
	})

	// 1. The release, as a user installs it plus the endpoint's address and keys.
	values := fmt.Sprintf(`cloudProvider: aws
webhook:
  enabled: false
settings:
  clusterName: %s
  interruptionQueue: %s
  batchIdleDuration: 500ms
  batchMaxDuration: 3s
controller:
  resources: {}
  env:
    - {name: AWS_ENDPOINT_URL, value: %q}
    - {name: AWS_REGION, value: %q}
    - {name: AWS_ACCESS_KEY_ID, value: %q}
    - {name: AWS_SECRET_ACCESS_KEY, value: %q}
`, clusterName, clusterName, endpoint.URL(), endpoint.Region(), localaws.AccessKeyID, localaws.SecretAccessKey)
	valuesPath := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(valuesPath, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := helm(ctx, "install", release, chartDir("dovetail"), "--namespace", namespace, "--create-namespace", "--values", valuesPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := helm(context.Background(), "uninstall", release, "--namespace", namespace, "--wait"); err != nil {
			t.Errorf("uninstalling %s: %v", release, err)
		}
	})

	// 2. The controller as the release's ServiceAccount.
	c := startReleaseController(t, release, namespace, serviceAccountKubeconfig(t, namespace, release), t.TempDir())
	nodeClass, pool := localcluster.DefaultEC2NodeClass(clusterName), localcluster.DefaultAWSNodePool()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chart-aws-"}}
	for _, obj := range []client.Object{nodeClass, pool, ns} {
		create(t, obj)
	}
	t.Cleanup(func() { cleanupWorkload(t, ns, pool, nodeClass) })

	// 3. Pods get EC2 instances that join as nodes.
	create(t, workloads.Deployment(ns.Name, "inflate", 3, "1", "256Mi"))
	workloads.WaitRunning(t, kube, ns.Name, "inflate", 3, 3*time.Minute)
	t.Logf("3 pods running on %d EC2 nodes launched through the local AWS endpoint", len(dovetailNodes(t)))

	// 4. Nothing was refused.
	for _, line := range strings.Split(c.log(t), "\n") {
		if strings.Contains(line, "forbidden") {
			t.Errorf("the API server refused a call: %.600s", line)
		}
	}
}
