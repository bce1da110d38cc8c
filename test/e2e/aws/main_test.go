// Package aws_test runs the whole Dovetail controller with the AWS cloud
// provider against the local AWS endpoint (internal/localaws) on the full
// local control plane: the provider's real aws-sdk-go-v2 clients launch EC2
// instances there, and running instances boot as kwok Nodes. The tests
// check what a user of the AWS provider sees: EC2NodeClasses resolve,
// pending pods get EC2 nodes that honour their constraints, capacity
// shortages fall back to the next offering, a new AMI drifts nodes within
// the disruption budget, instances that die are replaced, a controller
// killed mid-launch leaks nothing, and bad classes launch nothing.
//
// One cluster and one endpoint serve the whole package (TestMain); each
// test runs its own controller on its own NodePool and cleans up after
// itself, so the next one starts with no node of its own.
package aws_test

import (
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
)

// cluster is the package's control plane and local AWS endpoint (seed 7);
// the provider's real clients launch instances through its counting front.
var cluster *awse2e.Cluster

func TestMain(m *testing.M) {
	os.Exit(awse2e.Run(m, awse2e.Options{
		Seed:            7,
		NamespacePrefix: "test-aws-",
	}, &cluster))
}
