package cli

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dovetail-autoscaler/dovetail/internal/demo"
)

// DemoOptions configure `dovetail demo`.
type DemoOptions struct {
	// Cloud is the cloud provider: aws (the local AWS endpoint) or kwok.
	Cloud       string
	BinDir      string
	KeepWorkDir bool
	Streams     genericiooptions.IOStreams
}

// NewDemoCommand builds `dovetail demo`.
func NewDemoCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &DemoOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Watch Dovetail launch, price, drain and consolidate nodes on a local cluster (about two minutes)",
		Long: `Starts a local control plane and runs Dovetail on it.

With --cloud aws (the default) a local AWS endpoint runs beside it (EC2, IAM,
SSM, Pricing, SQS, EKS): the demo applies the EC2NodeClass and NodePool of
Karpenter's v1 API, shows what the EC2NodeClass resolved (subnets, security
groups, AMIs, instance profile), and the nodes are EC2 instances that boot as
kwok Nodes, shown with their instance and AMI IDs; at the end it deletes the
NodePool and checks that no instance is left running. With --cloud kwok the
nodes are simulated EC2-shaped nodes of a KWOKNodeClass.

The demo deploys three workloads (one spread over zones, one guarded by a
PodDisruptionBudget, one memory-heavy) and shows the nodes Dovetail launches
with their type, zone, capacity type and price. Then it deletes a node and
follows the drain, which never breaks the PodDisruptionBudget. Finally it
scales the workloads down and follows consolidation, which deletes and
replaces nodes until the cluster is cheaper, and prints a summary. Everything is stopped and removed at the end. The first run on a
fresh checkout builds the control-plane binaries (10-15 minutes).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Cloud, "cloud", CloudAWS, "cloud provider: aws (a local AWS endpoint whose instances become kwok Nodes; the v1 EC2NodeClass and NodePool) or kwok (KWOKNodeClass)")
	cmd.Flags().StringVar(&o.BinDir, "bin-dir", "", "directory holding the control-plane binaries (default: bin/ of the Dovetail checkout, built on first use)")
	cmd.Flags().BoolVar(&o.KeepWorkDir, "keep-work-dir", false, "keep the control plane's work directory (component and controller logs; LOG_LEVEL=debug logs each plan and nomination)")
	return cmd
}

// Validate checks the flags.
func (o *DemoOptions) Validate() error {
	if err := validateCloud(o.Cloud); err != nil {
		return err
	}
	return validateBinDir(o.BinDir)
}

// Run tells the demo's story.
func (o *DemoOptions) Run(ctx context.Context) error {
	binDir, err := ensureBinaries(ctx, o.BinDir, o.Streams.ErrOut)
	if err != nil {
		return err
	}
	_, err = demo.Run(ctx, demo.Options{Cloud: o.Cloud, BinDir: binDir, KeepWorkDir: o.KeepWorkDir, Out: o.Streams.Out})
	return err
}
