package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// SnapshotOptions are the flags and streams of `dovetail snapshot`.
type SnapshotOptions struct {
	// Kubeconfig and Context pick the cluster, as kubectl does.
	Kubeconfig, Context string

	genericiooptions.IOStreams
}

// NewSnapshotCommand returns `dovetail snapshot`, which writes the objects
// Dovetail's decisions read as one multi-document YAML stream.
func NewSnapshotCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &SnapshotOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "snapshot [--kubeconfig FILE] > cluster.yaml",
		Short: "Write the objects Dovetail decides on as YAML, for dovetail simulate --snapshot",
		Long: `Write the Nodes, NodeClaims, NodePools, NodeClasses (EC2NodeClass, KWOKNodeClass),
NodeOverlays (when the cluster serves them), pods (not the finished ones),
DaemonSets, Deployments, PodDisruptionBudgets, PersistentVolumeClaims,
PersistentVolumes, StorageClasses and Namespaces of a cluster to standard output, as a multi-document YAML stream without managed
fields. Feed it to "dovetail simulate --snapshot FILE" to rehearse changes
offline, or attach it to a bug report.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newKubeClient(o.Kubeconfig, o.Context)
			if err != nil {
				return err
			}
			objs, err := whatif.FromCluster(cmd.Context(), c)
			if err != nil {
				return err
			}
			return whatif.Write(o.Out, objs)
		},
	}
	cmd.Flags().StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	cmd.Flags().StringVar(&o.Context, "context", "", "kubeconfig context to use")
	return cmd
}
