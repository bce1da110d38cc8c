// Package aws_test runs the AWS cloud provider, as Build composes it,
// against a real kube-apiserver and the local AWS endpoint through the real
// aws-sdk-go-v2 clients: the EC2NodeClass controller resolves the seeded
// account into the class's status and conditions (and says which field is
// wrong when it cannot), the provider launches, finds, drifts and
// terminates instances, and the class's finalizer removes what the class
// made. Reconciles are called directly; nothing sleeps.
package aws_test

import (
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

var testEnv *env.Environment

func TestMain(m *testing.M) {
	os.Exit(env.Run(m, controlplane.ProfileAPIServer, &testEnv))
}
