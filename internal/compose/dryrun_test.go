package compose

import (
	"slices"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

type named string

func (n named) Name() string { return string(n) }

// TestDryRunComposed: --dry-run reaches the controllers' options, and of
// the providers' controllers only the read-only ones are kept.
func TestDryRunComposed(t *testing.T) {
	if !ControllerOptions(operator.Options{DryRun: true}).DryRun || ControllerOptions(operator.Options{}).DryRun {
		t.Error("ControllerOptions does not carry --dry-run")
	}
	all := []named{"aws.nodeclass", "aws.pricing", "aws.launchtemplate.gc", "aws.nodeclaim.tagging", "aws.interruption", "kwok.registration", "kwok.nodeclass.status"}
	if got := providerControllers(false, all); !slices.Equal(got, all) {
		t.Errorf("live: %v, want every controller", got)
	}
	if got := providerControllers(true, all); !slices.Equal(got, []named{"aws.pricing"}) {
		t.Errorf("dry run: %v, want only aws.pricing", got)
	}
}
