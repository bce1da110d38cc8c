package awse2e

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// Options are what differs between the packages that use the harness.
type Options struct {
	// Seed makes the local AWS endpoint's ids and throttling decisions
	// deterministic; packages use different ones.
	Seed uint64
	// NamespacePrefix is the GenerateName of the namespaces Suite.Namespace
	// creates.
	NamespacePrefix string
	// LogOnSuccess prints the controller's log (its last MaxLog bytes) at
	// the end of every test, not only of a failed one.
	LogOnSuccess bool
}

// Cluster is a package's control plane and local AWS endpoint, with the v1
// document's EC2NodeClass and NodePool "default" (the embedded
// localcluster.Cluster), and the counting front the controllers talk to
// the endpoint through.
type Cluster struct {
	*localcluster.Cluster
	// Clientset talks to the same API server, for informers.
	Clientset kubernetes.Interface
	// Calls counts the requests the endpoint served, by service and action.
	Calls *CallCounter
	// EndpointURL is the counting front of the endpoint.
	EndpointURL string

	opts Options
	// workDir holds the controller binary BeginProcess builds once.
	workDir    string
	binaryOnce sync.Once
	binary     string
	binaryErr  error
}

// Run starts the control plane with the local AWS endpoint and its
// counting front, sets *out, runs the package's tests and stops everything.
// It returns the exit code for os.Exit. A start failure fails the run
// loudly.
func Run(m *testing.M, opts Options, out **Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lc, err := localcluster.StartAWS(context.Background(), controlplane.Options{
		KeepWorkDir: os.Getenv("DOVETAIL_KEEP_CONTROLPLANE") == "true",
	}, localcluster.AWSOptions{Endpoint: localaws.Config{
		// Short EC2 lifecycle delays keep launches and terminations quick.
		PendingDelay: time.Second, StoppingDelay: time.Second, ShuttingDownDelay: time.Second,
		TickInterval: 200 * time.Millisecond, Seed: opts.Seed,
	}}, true)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local cluster with the AWS endpoint: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "starting the local cluster took too long\n")
	}
	c := &Cluster{Cluster: lc, opts: opts}
	c.Clientset, err = kubernetes.NewForConfig(lc.ControlPlane.RESTConfig)
	if err == nil {
		c.workDir, err = os.MkdirTemp("", "awse2e-")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a clientset and a work directory: %v\n", err)
		_ = lc.Stop()
		return 1
	}
	defer os.RemoveAll(c.workDir)
	c.Calls = NewCallCounter(lc.AWS)
	front := httptest.NewServer(c.Calls)
	c.EndpointURL = front.URL
	*out = c
	code := m.Run()
	front.Close()
	if err := lc.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the local cluster: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
