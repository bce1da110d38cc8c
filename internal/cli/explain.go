package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// ExplainOptions are the flags and streams of `dovetail explain`.
type ExplainOptions struct {
	// Kind is pod, node, nodeclaim or nodepool; Name names the object and
	// Namespace the pod's namespace.
	Kind, Name, Namespace string
	// Kubeconfig and Context pick the cluster when Snapshot is empty.
	Kubeconfig, Context string
	// Snapshot explains on a file written by `dovetail snapshot` instead.
	Snapshot string
	// Output is table, json or yaml.
	Output string
	// Clock gives the moment of the decisions; the real clock when nil.
	Clock clock.PassiveClock

	genericiooptions.IOStreams
}

// NewExplainCommand returns `dovetail explain`, which says why Dovetail
// does, or does not, do something about a pod, node, NodeClaim or NodePool.
func NewExplainCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &ExplainOptions{IOStreams: streams, Output: outputTable, Namespace: corev1.NamespaceDefault}
	cmd := &cobra.Command{
		Use:   "explain pod|node|nodeclaim|nodepool NAME [-n NAMESPACE] [--kubeconfig FILE]",
		Short: "Say why Dovetail does what it does about a pod, node, NodeClaim or NodePool",
		Long: `Explain a decision with the controllers' own code, run on the cluster as it is now:

  pod        for a pending pod, what provisioning would do with it and, for every
             NodePool, why it can or cannot serve it: its readiness (NodeClass not
             ready), a requirement or taint that does not match, a limit, or no
             instance type large enough (with the closest one and what it lacks)
  node       why it has its instance type (the options it beat, with their
             prices) and why it is not being consolidated: do-not-disrupt, a PDB,
             a nomination, the budget, consolidateAfter remaining, or no cheaper
             placement (the best one found, with its $/h delta)
  nodeclaim  the same, for a NodeClaim (in flight: its instance type only)
  nodepool   its readiness, its disruption budgets now and when they change

Messages that the controllers also publish as events (FailedScheduling,
DisruptionBlocked, Unconsolidatable) use the same words, so that the CLI and
"kubectl describe" agree. Instance types and prices come from the embedded EC2
catalog, whatever the NodeClass kind, with the cluster's NodeOverlays applied
to each NodePool's as the controllers apply them. Nothing is written to the
cluster.`,
		Example: `  dovetail explain pod web-7d9f -n shop
  dovetail explain node ip-10-0-1-7.ec2.internal
  dovetail explain nodepool default -o yaml`,
		Args:         cobra.ExactArgs(2),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Kind, o.Name = args[0], args[1]
			if err := validOutput(o.Output); err != nil {
				return err
			}
			var objs *whatif.Objects
			if o.Snapshot != "" {
				sim := &SimulateOptions{IOStreams: o.IOStreams}
				source, data, err := sim.readFile(o.Snapshot)
				if err != nil {
					return err
				}
				objs = &whatif.Objects{}
				if err := whatif.Load(source, data, objs); err != nil {
					return err
				}
			} else {
				c, err := newKubeClient(o.Kubeconfig, o.Context)
				if err != nil {
					return err
				}
				if objs, err = whatif.FromCluster(cmd.Context(), c); err != nil {
					return err
				}
			}
			return o.Run(objs)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "namespace of the pod")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.Snapshot, "snapshot", "", `explain on this snapshot file (from "dovetail snapshot") instead of a cluster`)
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: table, json or yaml")
	return cmd
}

// Run explains the object of the options on objs and prints the answer.
func (o *ExplainOptions) Run(objs *whatif.Objects) error {
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	e, err := whatif.Explain(objs, o.Kind, o.Namespace, o.Name, whatif.Options{Now: clk.Now()})
	if err != nil {
		var nf *whatif.NotFoundError
		if errors.As(err, &nf) {
			return fmt.Errorf("explaining: %w", err)
		}
		return err
	}
	return printResult(o.Out, o.Output, e, func(w io.Writer) error { return whatif.WriteExplanation(w, e) })
}
