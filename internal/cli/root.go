package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCommand builds the `dovetail` command with every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "dovetail",
		Short: "Dovetail is a Kubernetes node autoscaler that implements the Karpenter APIs",
		Long: `Dovetail launches the cheapest nodes that fit pending pods and removes nodes
that are empty, under-used, drifted or expired, inside the disruption budgets you
set. It speaks the Karpenter APIs (NodePool, NodeClaim, EC2NodeClass), so your
Karpenter manifests apply unchanged.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.AddCommand(NewDemoCommand(streams), NewUpCommand(streams), NewControllerCommand(streams), NewConvertCommand(streams),
		NewSnapshotCommand(streams), NewSimulateCommand(streams), NewExplainCommand(streams), NewViewCommand(streams))
	return root
}
