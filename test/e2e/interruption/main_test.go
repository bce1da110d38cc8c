// Package interruption_test runs the whole Dovetail controller with the AWS
// cloud provider and its interruption controller against the local AWS
// endpoint (internal/localaws) on the full local control plane, and checks
// what a user sees when EC2 takes instances away: a spot interruption
// warning moves the pods within their PodDisruptionBudget and before the
// reclaim, and the next launch avoids the reclaimed offering; a scheduled
// change and an instance stopped behind Dovetail's back replace the node;
// spot capacity that runs out everywhere falls back to on-demand once,
// without a launch loop.
//
// One cluster and one endpoint serve the whole package (TestMain); each
// test runs its own controller on its own NodePool and cleans up after
// itself, so the next one starts with no node of its own. The spot reclaim
// runs on the real clock: two minutes after the warning, as on EC2.
package interruption_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

var (
	// cluster is the package's control plane and local AWS endpoint, with
	// the v1 document's EC2NodeClass and NodePool "default".
	cluster *localcluster.Cluster
	// clientset talks to the same API server, for informers.
	clientset kubernetes.Interface
	// calls counts the requests the endpoint served, by service and action;
	// the controllers talk to the endpoint through it.
	calls *callCounter
	// endpointURL is the counting front of the endpoint.
	endpointURL string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	cluster, err = localcluster.StartAWS(context.Background(), controlplane.Options{
		KeepWorkDir: os.Getenv("DOVETAIL_KEEP_CONTROLPLANE") == "true",
	}, localcluster.AWSOptions{Endpoint: localaws.Config{
		// Short EC2 lifecycle delays keep launches and terminations quick.
		PendingDelay: time.Second, StoppingDelay: time.Second, ShuttingDownDelay: time.Second,
		TickInterval: 200 * time.Millisecond, Seed: 11,
	}}, true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local cluster with the AWS endpoint: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "starting the local cluster took too long\n")
	}
	clientset, err = kubernetes.NewForConfig(cluster.ControlPlane.RESTConfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a clientset: %v\n", err)
		_ = cluster.Stop()
		return 1
	}
	calls = newCallCounter(cluster.AWS)
	front := httptest.NewServer(calls)
	endpointURL = front.URL
	code := m.Run()
	front.Close()
	if err := cluster.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
