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
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
)

// cluster is the package's control plane and local AWS endpoint (seed 11);
// the interruption controller and the provider talk to it through its counting front.
var cluster *awse2e.Cluster

func TestMain(m *testing.M) {
	os.Exit(awse2e.Run(m, awse2e.Options{
		Seed:            11,
		NamespacePrefix: "test-interruption-",
		// INTERRUPTION_E2E_LOG set prints the controller's log of passing tests too.
		LogOnSuccess: os.Getenv("INTERRUPTION_E2E_LOG") != "",
	}, &cluster))
}
