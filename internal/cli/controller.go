package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	awsprovider "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/settings"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// ControllerOptions configure `dovetail controller`.
type ControllerOptions struct {
	Operator      operator.Options
	CloudProvider string
	Kwok          compose.KwokOptions
	AWS           settings.Settings
	Streams       genericiooptions.IOStreams
}

// NewControllerCommand builds `dovetail controller`, the autoscaler itself.
func NewControllerCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &ControllerOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Dovetail controller against a cluster",
		Long: `Runs Dovetail's controllers: provisioning, NodeClaim lifecycle, termination,
NodePool status and the cloud provider's own. Options come from flags or, where
noted in brackets, the environment variables Karpenter uses.

--dry-run is shadow mode: every provisioning and disruption decision is taken
and published (Shadow* events, dovetail_shadow_* metrics, logs) but nothing is
launched, tainted, evicted or deleted, and only the controllers that read run,
so that Dovetail can watch beside Karpenter or the Cluster Autoscaler.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			return operator.ApplyEnvironment(cmd.Flags(), nil)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	o.Operator.AddFlags(cmd.Flags())
	o.Kwok.AddFlags(cmd.Flags())
	o.AWS.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.CloudProvider, "cloud-provider", "kwok", "cloud provider: aws (EC2) or kwok (simulated nodes from the EC2 catalog) [CLOUD_PROVIDER]")
	return cmd
}

// Validate checks the flags.
func (o *ControllerOptions) Validate() error {
	switch o.CloudProvider {
	case "kwok":
		if err := o.Kwok.Validate(); err != nil {
			return err
		}
	case "aws":
		if err := o.AWS.Validate(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--cloud-provider %q is not supported (supported: aws, kwok)", o.CloudProvider)
	}
	return o.Operator.Validate()
}

// Run builds the operator and runs the controllers until ctx ends.
func (o *ControllerOptions) Run(ctx context.Context) error {
	o.Operator.WebhookDefaultNodeClass = kwok.NodeClassGVK().GroupKind()
	if o.CloudProvider == "aws" {
		o.Operator.WebhookDefaultNodeClass = awsprovider.NodeClassGVK().GroupKind()
	}
	op, err := operator.New(ctx, o.Operator, nil)
	if err != nil {
		return err
	}
	if o.CloudProvider == "aws" {
		return compose.RunWithAWS(ctx, op, o.AWS)
	}
	return compose.RunWithKwok(ctx, op, o.Kwok)
}
