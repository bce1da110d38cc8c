package compose

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/node/health"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// TestKwokFlags: the kwok flags accept the instance-type sets and refuse,
// naming the flag, an unknown set and zones for a set whose zones are fixed.
func TestKwokFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		wantErr string
	}{
		"default":                           {},
		"ec2 with zones":                    {args: []string{"--kwok-instance-types=ec2", "--kwok-zones=us-east-1a"}},
		"karpenter-kwok":                    {args: []string{"--kwok-instance-types=karpenter-kwok"}},
		"unknown set":                       {args: []string{"--kwok-instance-types=gcp"}, wantErr: `--kwok-instance-types "gcp" is not supported`},
		"set in the wrong case":             {args: []string{"--kwok-instance-types=EC2"}, wantErr: "--kwok-instance-types"},
		"karpenter-kwok with zones":         {args: []string{"--kwok-instance-types=karpenter-kwok", "--kwok-zones=us-east-1a"}, wantErr: "--kwok-zones applies to --kwok-instance-types=ec2 only"},
		"empty zone":                        {args: []string{"--kwok-zones=us-east-1a,"}, wantErr: "--kwok-zones: empty zone name"},
		"negative launch delay":             {args: []string{"--kwok-launch-delay=-1s"}, wantErr: "must not be negative"},
		"zone outside the catalog's region": {args: []string{"--kwok-zones=eu-west-1a"}, wantErr: "--kwok-zones"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o KwokOptions
			fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parsing %v: %v", tc.args, err)
			}
			err := o.Validate()
			if err == nil {
				_, err = o.providerOptions()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("%v: %v", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.wantErr)
			}
		})
	}
}

// TestNodeRepairComposed: the node.health controller is among the
// controllers by default and absent with NodeRepair=false.
func TestNodeRepairComposed(t *testing.T) {
	for gates, want := range map[string]bool{"": true, "NodeRepair=false": false, "NodeRepair=true": true} {
		o := operator.Options{FeatureGates: gates}
		opts := ControllerOptions(o)
		if opts.NodeRepair != want {
			t.Errorf("--feature-gates=%q: NodeRepair = %v, want %v", gates, opts.NodeRepair, want)
		}
		found := false
		var asked, carried *health.Requests
		for _, c := range controllers.NewControllers(controllers.Dependencies{Clock: clocktesting.NewFakeClock(time.Time{}), Cluster: state.NewCluster(clocktesting.NewFakeClock(time.Time{})), CloudProvider: fake.NewCloudProvider()}, opts) {
			found = found || c.Name() == "node.health"
			switch c := c.(type) {
			case *health.Controller:
				asked = c.Requests()
			case *disrupter.Controller:
				carried = c.Repairs()
			}
		}
		if found != want {
			t.Errorf("--feature-gates=%q: node.health composed = %v, want %v", gates, found, want)
		}
		// The disruption loop carries out the requests node.health makes,
		// and none without it.
		if asked != carried || (carried != nil) != want {
			t.Errorf("--feature-gates=%q: node.health writes requests %p, the disruption loop reads %p", gates, asked, carried)
		}
	}
}

// TestDovetailGatesComposed: the EarlyProvisioning gate reaches the
// provisioner's options, and MultiNodeReplacements and
// ConsolidationCandidateTaint the disrupter's.
func TestDovetailGatesComposed(t *testing.T) {
	for gates, want := range map[string][3]bool{
		"": {true, false, true}, "EarlyProvisioning=false": {false, false, true}, "EarlyProvisioning=true": {true, false, true},
		"MultiNodeReplacements=true": {true, true, true}, "EarlyProvisioning=false,MultiNodeReplacements=false": {false, false, true},
		"ConsolidationCandidateTaint=false": {true, false, false},
	} {
		opts := ControllerOptions(operator.Options{FeatureGates: gates})
		if got := [3]bool{opts.Provisioning.EarlyProvisioning, opts.Disruption.MultiNodeReplacements, opts.Disruption.CandidateTaints}; got != want {
			t.Errorf("--feature-gates=%q: Provisioning.EarlyProvisioning, Disruption.MultiNodeReplacements, Disruption.CandidateTaints = %v, want %v", gates, got, want)
		}
	}
}
