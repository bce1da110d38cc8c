package simulator_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// oracleDirEnv names the directory the tests write every plan they verify
// to, as a replay.Problem in JSON, for the kube-scheduler oracle
// (test/oracle) to replay. Unset, nothing is written.
const oracleDirEnv = "DOVETAIL_ORACLE_DIR"

var dumped atomic.Int64

// dumpProblem writes pr to $DOVETAIL_ORACLE_DIR, if set.
func dumpProblem(t *testing.T, pr *replay.Problem) {
	t.Helper()
	dir := os.Getenv(oracleDirEnv)
	if dir == "" {
		return
	}
	data, err := json.Marshal(pr)
	if err != nil {
		t.Fatalf("encoding the plan for the oracle: %v", err)
	}
	name := strings.NewReplacer("/", "_", " ", "_", "#", "_", ",", "", "'", "", "\"", "").Replace(pr.Name)
	if len(name) > 150 {
		name = name[:150]
	}
	path := filepath.Join(dir, fmt.Sprintf("%05d-%s.json", dumped.Add(1), name))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatalf("writing the plan for the oracle: %v", err)
	}
}
