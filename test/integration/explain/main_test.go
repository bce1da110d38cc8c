// Package explain_test runs `dovetail explain` (package whatif behind it)
// against a real kube-apiserver and etcd: the objects are created through
// the API as the controllers leave them, read back with whatif.FromCluster,
// and each reason a pod is pending or a node is not consolidated is checked
// in the words the controllers' events use.
package explain_test

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
