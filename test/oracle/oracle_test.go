package oracle

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// TestSimulatorPlans runs the simulator's tests (table tests, the fuzz seed
// corpus and the workload fidelity tests) with DOVETAIL_ORACLE_DIR set, so
// that they write every plan they verify, then replays each plan through the
// kube-scheduler's filter plugins: every pod must pass on its planned node.
// DOVETAIL_ORACLE_SIZES (default "1000,5000") picks the workload sizes;
// DOVETAIL_ORACLE_PLANS names a directory of plans written earlier to replay
// instead.
func TestSimulatorPlans(t *testing.T) {
	dir := os.Getenv("DOVETAIL_ORACLE_PLANS")
	if dir == "" {
		dir = t.TempDir()
		cmd := exec.CommandContext(t.Context(), "go", "test", "-count=1", "-run", "^(Test|Fuzz)", "./internal/simulator/")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "DOVETAIL_ORACLE_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("running the simulator's tests: %v\n%s", err, out)
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatalf("listing the plans: %v", err)
	}
	if len(files) == 0 {
		t.Fatalf("the simulator's tests wrote no plans to %s", dir)
	}
	t.Logf("%d plans", len(files))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pr := readProblem(t, f)
			rep, err := Check(t.Context(), pr)
			if err != nil {
				t.Fatalf("replaying %s: %v", pr.Name, err)
			}
			if pr.Name != "" && (len(pr.Bindings) >= 1000) {
				t.Logf("%s", rep)
			}
			if !rep.Passed() {
				t.Errorf("the kube-scheduler rejects the plan: %s", rep)
			}
		})
	}
}

func readProblem(t *testing.T, path string) *replay.Problem {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	pr := &replay.Problem{}
	if err := json.Unmarshal(data, pr); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return pr
}
