// Package interruption_test runs the AWS interruption controller against a
// real kube-apiserver and the local AWS endpoint's SQS, through the real SDK
// client: interruption messages go on the queue, and the tests watch
// NodeClaims, Nodes, events, the unavailable-offerings cache, the metrics
// and the queue's depth.
package interruption_test

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
