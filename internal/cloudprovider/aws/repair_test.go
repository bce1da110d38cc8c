package aws

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRepairPolicies pins the conditions and tolerations Karpenter's AWS
// provider repairs on: users who run the EKS node monitoring agent rely on
// its conditions getting a broken node replaced, GPU nodes sooner.
func TestRepairPolicies(t *testing.T) {
	got := map[string]time.Duration{}
	for _, p := range (&CloudProvider{}).RepairPolicies() {
		got[p.ConditionType+"="+string(p.ConditionStatus)] = p.TolerationDuration
	}
	want := map[string]time.Duration{
		"Ready=False":                    30 * time.Minute,
		"Ready=Unknown":                  30 * time.Minute,
		"AcceleratedHardwareReady=False": 10 * time.Minute,
		"StorageReady=False":             30 * time.Minute,
		"NetworkingReady=False":          30 * time.Minute,
		"KernelReady=False":              30 * time.Minute,
		"ContainerRuntimeReady=False":    30 * time.Minute,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("repair policies (-want +got):\n%s", diff)
	}
}
