// Package api_test checks Dovetail's CRDs against a real kube-apiserver:
// every example manifest is accepted, invalid objects are rejected with an
// error naming the offending field, defaults and printer columns are as the
// v1 API document says.
package api_test

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
