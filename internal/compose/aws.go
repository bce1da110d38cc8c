package compose

import (
	"context"
	"fmt"

	awsprovider "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/settings"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// RunWithAWS composes the AWS provider and every controller on the
// operator and runs them until ctx ends. A missing or invalid setting stops
// it before anything runs, naming the setting.
func RunWithAWS(ctx context.Context, op *operator.Operator, s settings.Settings) error {
	deps := awsprovider.Deps{
		Settings:   s,
		KubeClient: op.KubeClient,
		APIReader:  op.Manager.GetAPIReader(),
		RESTConfig: op.RESTConfig,
		Clock:      op.Clock,
		Recorder:   op.Recorder,
		Registerer: op.Registry,
	}
	if op.Metrics != nil {
		deps.NodeClaimsDisrupted = op.Metrics.NodeClaimsDisrupted
	}
	rt, err := awsprovider.Build(ctx, deps)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped while starting (a call to AWS was cancelled): a clean
			// shutdown, as a stop after start is.
			return nil
		}
		return fmt.Errorf("building the aws cloud provider: %w", err)
	}
	all := controllers.NewControllers(controllers.Dependencies{
		Clock: op.Clock, KubeClient: op.KubeClient, APIReader: op.Manager.GetAPIReader(), Cluster: state.NewCluster(op.Clock).WithAPIReader(op.Manager.GetAPIReader()),
		CloudProvider: rt.CloudProvider, Recorder: op.Recorder, Metrics: op.Metrics,
	}, ControllerOptions(op.Options))
	for _, c := range providerControllers(op.Options.DryRun, rt.Controllers) {
		all = append(all, c)
	}
	if err := controllers.Register(ctx, op.Manager, all); err != nil {
		return fmt.Errorf("registering controllers: %w", err)
	}
	return op.Start(ctx)
}
