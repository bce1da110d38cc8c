package whatif_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

func TestWriteResultBoundsTables(t *testing.T) {
	r := &whatif.Result{Note: "note"}
	for i := range 52 {
		r.Placements = append(r.Placements, whatif.Placement{Pod: fmt.Sprintf("ns/p-%d", i), Node: "node-a"})
	}
	for i := range 12 {
		r.Disruption.Candidates = append(r.Disruption.Candidates, whatif.Candidate{Node: fmt.Sprintf("node-%d", i)})
	}
	r.Disruption.Budgets = []whatif.Budget{{NodePool: "default", Reason: "Empty", Allowed: -1}, {NodePool: "default", Reason: "Drifted", Allowed: 2}}
	var out strings.Builder
	if err := whatif.WriteResult(&out, r); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"ns/p-49 ", "... and 2 more", "node-9 ", "unlimited", "Drifted  2"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, notWant := range []string{"ns/p-50", "node-10"} {
		if strings.Contains(got, notWant) {
			t.Errorf("output has %q past the table's bound:\n%s", notWant, got)
		}
	}
	if n := strings.Count(got, "... and 2 more"); n != 2 {
		t.Errorf("got %d truncation lines, want 2 (placements and candidates)", n)
	}
}
