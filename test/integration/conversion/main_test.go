// Package conversion_test runs Dovetail's conversion webhook against a real
// kube-apiserver: the CRDs are re-installed with strategy Webhook pointing
// at a webhook served by a manager in the test process, whose certificate
// cert-controller issues and injects. Objects are written and read through
// v1beta1 and v1 with the dynamic client, as kubectl would, and compared with
// what was written.
package conversion_test

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
