// Package compose assembles a running Dovetail from its parts: it builds the
// kwok cloud provider and every controller on an operator and runs them. The
// in-cluster `dovetail controller`, `dovetail up`, the demo and the
// end-to-end tests all start the controller through it, so they run the same
// composition.
package compose

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/disrupter"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/provisioning"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// KwokOptions configure the kwok cloud provider.
type KwokOptions struct {
	LaunchDelay       time.Duration
	RegistrationDelay time.Duration
	Zones             []string
	// InstanceTypes picks the instance types offered: ec2 (the embedded
	// catalog, the default) or karpenter-kwok (the set Karpenter's kwok
	// provider generates).
	InstanceTypes string
}

// AddFlags registers the kwok provider's flags.
func (o *KwokOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.LaunchDelay, "kwok-launch-delay", 0, "how long a simulated instance launch takes")
	fs.DurationVar(&o.RegistrationDelay, "kwok-registration-delay", 0, "how long a simulated instance takes to register as a Node (a KWOKNodeClass's spec.nodeRegistrationDelay overrides it)")
	fs.StringSliceVar(&o.Zones, "kwok-zones", nil, "zones of the simulated instances of the ec2 instance types (default us-east-1a,us-east-1b,us-east-1c)")
	fs.StringVar(&o.InstanceTypes, "kwok-instance-types", string(kwok.InstanceTypesEC2),
		"instance types of the simulated instances: ec2 (the embedded EC2 catalog) or karpenter-kwok (the types of Karpenter's kwok provider, such as c-16x-amd64-linux in test-zone-a..d) [KWOK_INSTANCE_TYPES]")
}

// Validate checks the kwok flags.
func (o *KwokOptions) Validate() error {
	if o.LaunchDelay < 0 || o.RegistrationDelay < 0 {
		return fmt.Errorf("--kwok-launch-delay and --kwok-registration-delay must not be negative")
	}
	for _, z := range o.Zones {
		if strings.TrimSpace(z) == "" {
			return fmt.Errorf("--kwok-zones: empty zone name")
		}
	}
	set := kwok.InstanceTypeSet(o.InstanceTypes)
	if set != "" && !slices.Contains(kwok.InstanceTypeSets(), set) {
		return fmt.Errorf("--kwok-instance-types %q is not supported (supported: %v)", o.InstanceTypes, kwok.InstanceTypeSets())
	}
	if set == kwok.InstanceTypesKarpenterKWOK && len(o.Zones) > 0 {
		return fmt.Errorf("--kwok-zones applies to --kwok-instance-types=%s only; the %s types have the zones %v", kwok.InstanceTypesEC2, set, kwok.KarpenterKWOKZones())
	}
	return nil
}

func (o *KwokOptions) providerOptions() (kwok.Options, error) {
	opts := kwok.Options{LaunchDelay: o.LaunchDelay, RegistrationDelay: o.RegistrationDelay, InstanceTypes: kwok.InstanceTypeSet(o.InstanceTypes)}
	if len(o.Zones) > 0 {
		c := catalog.DefaultOptions()
		c.Zones = o.Zones
		if err := c.Validate(); err != nil {
			return opts, fmt.Errorf("--kwok-zones: %w", err)
		}
		opts.Catalog = &c
	}
	return opts, nil
}

// ControllerOptions derives the controllers' options from the operator's.
func ControllerOptions(o operator.Options) controllers.Options {
	life := lifecycle.DefaultOptions()
	life.RegistrationTimeout = o.RegistrationTimeout
	opts := controllers.Options{
		Provisioning: provisioning.Options{
			BatchIdleDuration: o.BatchIdleDuration,
			BatchMaxDuration:  o.BatchMaxDuration,
			Simulator: simulator.Options{
				PreferencePolicy: simulator.PreferencePolicy(o.PreferencePolicy),
				MinValuesPolicy:  simulator.MinValuesPolicy(o.MinValuesPolicy),
			},
		},
		Lifecycle:         life,
		GarbageCollection: garbagecollection.DefaultOptions(),
		Disruption:        disrupter.DefaultOptions(),
	}
	gates, _ := o.Gates() // validated with the options
	opts.Disruption.ValidationDelay = o.DisruptionValidationDelay
	opts.Disruption.ReplacementTimeout = o.DisruptionReplacementTimeout
	opts.Disruption.SpotToSpotConsolidation = gates.SpotToSpotConsolidation
	opts.Disruption.MultiNodeReplacements = gates.MultiNodeReplacements
	opts.Disruption.CandidateTaints = gates.ConsolidationCandidateTaint
	opts.NodeRepair = gates.NodeRepair
	opts.DisableNodeOverlay = !gates.NodeOverlay
	opts.Provisioning.EarlyProvisioning = gates.EarlyProvisioning
	opts.Disruption.NominationWindow = opts.Provisioning.NominationWindow()
	opts.Disruption.Simulator = opts.Provisioning.Simulator
	opts.DryRun = o.DryRun
	return opts
}

// readOnlyProviderController reports the cloud providers' controllers
// that shadow mode (--dry-run) runs: they read the cloud and keep caches in
// memory. The others write: the kwok registration controller creates
// Nodes, the NodeClass controllers write NodeClass status and delete
// launch templates, tagging tags instances and NodeClaims, the
// reservation expiration controller deletes NodeClaims, and the
// interruption controller deletes NodeClaims and consumes the queue's
// messages (which the autoscaler beside it needs).
func readOnlyProviderController(name string) bool { return name == "aws.pricing" }

// providerControllers keeps the provider controllers shadow mode may run.
func providerControllers[C interface{ Name() string }](dryRun bool, all []C) []C {
	if !dryRun {
		return all
	}
	var out []C
	for _, c := range all {
		if readOnlyProviderController(c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// RunWithKwok composes the kwok provider and every controller on the
// operator and runs them until ctx ends.
func RunWithKwok(ctx context.Context, op *operator.Operator, kwokOpts KwokOptions) error {
	providerOpts, err := kwokOpts.providerOptions()
	if err != nil {
		return err
	}
	provider, err := kwok.New(op.KubeClient, op.Clock, providerOpts)
	if err != nil {
		return fmt.Errorf("creating the kwok cloud provider: %w", err)
	}
	deps := controllers.Dependencies{
		Clock: op.Clock, KubeClient: op.KubeClient, APIReader: op.Manager.GetAPIReader(), Cluster: state.NewCluster(op.Clock).WithAPIReader(op.Manager.GetAPIReader()),
		CloudProvider: provider, Recorder: op.Recorder, Metrics: op.Metrics,
	}
	all := controllers.NewControllers(deps, ControllerOptions(op.Options))
	all = append(all, providerControllers(op.Options.DryRun, []controllers.Controller{
		kwok.NewRegistrationController(op.KubeClient, op.Clock, provider),
		kwok.NewNodeClassController(op.KubeClient, op.Clock),
	})...)
	if err := controllers.Register(ctx, op.Manager, all); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	return op.Start(ctx)
}
