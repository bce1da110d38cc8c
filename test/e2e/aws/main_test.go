// Package aws_test runs the whole Dovetail controller with the AWS cloud
// provider against the local AWS endpoint (internal/localaws) on the full
// local control plane: the provider's real aws-sdk-go-v2 clients launch EC2
// instances there, and running instances boot as kwok Nodes. The tests
// check what a user of the AWS provider sees: EC2NodeClasses resolve,
// pending pods get EC2 nodes that honour their constraints, capacity
// shortages fall back to the next offering, a new AMI drifts nodes within
// the disruption budget, instances that die are replaced, a controller
// stopped mid-launch leaks nothing, and bad classes launch nothing.
//
// One cluster and one endpoint serve the whole package (TestMain); each
// test runs its own controller on its own NodePool and cleans up after
// itself, so the next one starts with no node of its own.
package aws_test

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
		TickInterval: 200 * time.Millisecond, Seed: 7,
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
