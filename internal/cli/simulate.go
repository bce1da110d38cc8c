package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// Output formats of simulate and explain.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// SimulateOptions are the flags and streams of `dovetail simulate`.
type SimulateOptions struct {
	// Kubeconfig and Context pick the cluster when Snapshot is empty.
	Kubeconfig, Context string
	// Snapshot is a file written by `dovetail snapshot` ("-" for standard input).
	Snapshot string
	// Filenames are manifests to apply before simulating ("-" for standard input).
	Filenames []string
	// RemoveNodes are Nodes or NodeClaims to take away.
	RemoveNodes []string
	// Scale are "deployment/NAMESPACE/NAME=N" changes.
	Scale []string
	// Output is table, json or yaml.
	Output string
	// Clock gives the moment of the decisions; the real clock when nil.
	Clock clock.PassiveClock
	// AgainstLive compares the live cluster's nodes with a fresh plan for
	// its pods instead (see LiveComparison).
	AgainstLive bool

	genericiooptions.IOStreams

	changes whatif.Changes
	read    bool
}

// NewSimulateCommand returns `dovetail simulate`, which prints what Dovetail
// would do on a cluster or a snapshot, after changes, writing nothing.
func NewSimulateCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &SimulateOptions{IOStreams: streams, Output: outputTable}
	cmd := &cobra.Command{
		Use:   "simulate [--snapshot FILE | --kubeconfig FILE] [-f MANIFEST ...] [--remove-node NAME ...] [--scale deployment/NS/NAME=N ...] [--against-live]",
		Short: "Print what Dovetail would do now, or after changes, without touching the cluster",
		Long: `Run Dovetail's provisioning pass and disruption decision on a cluster (read
through --kubeconfig, $KUBECONFIG or ~/.kube/config) or on a snapshot written
by "dovetail snapshot", after the changes you give, and print: the NodeClaims
it would launch (NodePool, instance-type options, cheapest offering, zone,
capacity type, $/h), the pending pods it would place on existing nodes, the
pods it cannot place and why, the disruption it would carry out now (nodes
deleted or replaced, pods moved, savings), the nodes it would not disrupt and
why, the budgets, and the hourly price before and after. Nothing is written
to the cluster.

Changes: -f adds or replaces objects as kubectl apply would (NodePools,
NodeClasses, NodeOverlays, pods; a Deployment, StatefulSet or ReplicaSet
becomes its replicas as pending pods), --remove-node takes a node away (its pods become
pending) and --scale sets a Deployment's replicas.

--against-live compares instead the cluster as it runs now (its nodes, by
NodePool, instance type and capacity type, and their $/h) with what Dovetail
would run for the same pods from scratch: every node and NodeClaim removed
(control-plane nodes excepted) and every pod placed anew on the NodePools.
Run beside Karpenter or the Cluster Autoscaler, it answers "what would
switching save?"; a Dovetail in shadow mode (controller --dry-run) publishes
its decisions as they happen.

The code is the controllers' own: the cluster-state model, the scheduling
simulator and the disruption decision. Instance types and prices come from
the embedded EC2 catalog (us-east-1, AL2023) for every NodeClass kind, so the
AWS provider's subnet, AMI and reservation filtering is not modelled. The
cluster's NodeOverlays (karpenter.sh/v1alpha1) are applied to each NodePool's
instance types as the controllers apply them, skipping those whose status says
ValidationSucceeded=False; a price one set is marked * in the tables.`,
		Example: `  # What would Dovetail do on the current cluster?
  dovetail simulate

  # Rehearse a higher-weight spot NodePool and 30 more replicas, offline
  dovetail snapshot > cluster.yaml
  dovetail simulate --snapshot cluster.yaml -f spot-nodepool.yaml --scale deployment/shop/web=40

  # Rehearse a NodeOverlay (a negotiated discount) before applying it
  dovetail simulate -f discount-overlay.yaml

  # What if these two nodes went away? As JSON, for a script
  dovetail simulate --remove-node ip-10-0-1-7 --remove-node ip-10-0-2-9 -o json

  # Beside Karpenter or the Cluster Autoscaler: what would Dovetail run for
  # these pods, and at what $/h, compared with the nodes running now?
  dovetail simulate --against-live`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			objs, err := o.load(cmd)
			if err != nil {
				return err
			}
			if o.AgainstLive {
				return o.RunAgainstLive(objs)
			}
			return o.Run(objs)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use")
	f.StringVar(&o.Snapshot, "snapshot", "", `simulate on this snapshot file (from "dovetail snapshot"; "-" for standard input) instead of a cluster`)
	f.StringArrayVarP(&o.Filenames, "filename", "f", nil, `manifest of changes to apply first, "-" for standard input; repeatable`)
	f.StringArrayVar(&o.RemoveNodes, "remove-node", nil, "take this Node (or NodeClaim) away first; its pods become pending; repeatable")
	f.StringArrayVar(&o.Scale, "scale", nil, "set a Deployment's replicas first: deployment/NAMESPACE/NAME=N; repeatable")
	f.StringVarP(&o.Output, "output", "o", o.Output, "output format: table, json or yaml")
	f.BoolVar(&o.AgainstLive, "against-live", false, "compare the live cluster's nodes and $/h with what Dovetail would run for the same pods from scratch "+
		"(every node removed, every pod placed anew; -f changes apply to Dovetail's side); not with --snapshot, --remove-node or --scale")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("snapshot", "yaml", "yml")
	return cmd
}

// Validate checks the flags and reads the manifests of changes.
func (o *SimulateOptions) Validate() error {
	if err := validOutput(o.Output); err != nil {
		return err
	}
	if o.AgainstLive {
		if err := o.validateAgainstLive(); err != nil {
			return err
		}
	}
	o.changes = whatif.Changes{RemoveNodes: o.RemoveNodes, Manifests: &whatif.Objects{}}
	for _, s := range o.Scale {
		sc, err := whatif.ParseScale(s)
		if err != nil {
			return err
		}
		o.changes.Scale = append(o.changes.Scale, sc)
	}
	for _, name := range o.Filenames {
		source, data, err := o.readFile(name)
		if err != nil {
			return err
		}
		if err := whatif.Load(source, data, o.changes.Manifests); err != nil {
			return err
		}
	}
	return nil
}

// readFile reads a file, or standard input (once) for "-".
func (o *SimulateOptions) readFile(name string) (string, []byte, error) {
	if name != "-" {
		data, err := os.ReadFile(name)
		if err != nil {
			return "", nil, fmt.Errorf("reading %s: %w", name, err)
		}
		return name, data, nil
	}
	if o.read {
		return "", nil, errors.New(`standard input ("-") can be read only once`)
	}
	o.read = true
	data, err := io.ReadAll(o.In)
	if err != nil {
		return "", nil, fmt.Errorf("reading standard input: %w", err)
	}
	return stdinSource, data, nil
}

// load reads the cluster: the snapshot, or the API server.
func (o *SimulateOptions) load(cmd *cobra.Command) (*whatif.Objects, error) {
	if o.Snapshot != "" {
		source, data, err := o.readFile(o.Snapshot)
		if err != nil {
			return nil, err
		}
		objs := &whatif.Objects{}
		if err := whatif.Load(source, data, objs); err != nil {
			return nil, err
		}
		return objs, nil
	}
	c, err := newKubeClient(o.Kubeconfig, o.Context)
	if err != nil {
		return nil, err
	}
	return whatif.FromCluster(cmd.Context(), c)
}

// Run applies the changes, simulates and prints the result.
func (o *SimulateOptions) Run(objs *whatif.Objects) error {
	changed, err := whatif.Apply(objs, o.changes)
	if err != nil {
		return err
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	res, err := whatif.Simulate(changed, whatif.Options{Now: clk.Now(), Original: objs})
	if err != nil {
		return err
	}
	return printResult(o.Out, o.Output, res, func(w io.Writer) error { return whatif.WriteResult(w, res) })
}

// RunAgainstLive compares the cluster with a fresh plan and prints it.
func (o *SimulateOptions) RunAgainstLive(objs *whatif.Objects) error {
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	c, err := CompareWithLive(objs, o.changes.Manifests, clk.Now())
	if err != nil {
		return err
	}
	return printResult(o.Out, o.Output, c, func(w io.Writer) error { return WriteLiveComparison(w, c) })
}

func validOutput(format string) error {
	switch format {
	case outputTable, outputJSON, outputYAML:
		return nil
	}
	return fmt.Errorf("--output %q: want table, json or yaml", format)
}

// printResult writes v as JSON or YAML, or calls table.
func printResult(w io.Writer, format string, v any, table func(io.Writer) error) error {
	switch format {
	case outputJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
		return nil
	case outputYAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("writing YAML: %w", err)
		}
		return nil
	}
	return table(w)
}
