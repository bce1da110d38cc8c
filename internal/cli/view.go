package cli

import (
	"context"
	"fmt"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/operator"
	"github.com/dovetail-autoscaler/dovetail/internal/view"
)

// ViewOptions are the flags and streams of `dovetail view`.
type ViewOptions struct {
	// Kubeconfig and Context pick the cluster, as kubectl does.
	Kubeconfig, Context string
	// Once prints one screen to Out and exits.
	Once bool
	// Timeout bounds the first contact with the cluster.
	Timeout time.Duration
	// Clock gives the moment of the screen; the real clock when nil.
	Clock clock.PassiveClock

	genericiooptions.IOStreams
}

// NewViewCommand returns `dovetail view`, a live terminal view of a
// cluster's nodes and NodeClaims by NodePool.
func NewViewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &ViewOptions{IOStreams: streams, Timeout: 20 * time.Second}
	cmd := &cobra.Command{
		Use:   "view [--kubeconfig FILE] [--context NAME] [--once]",
		Short: "Watch nodes and in-flight NodeClaims by NodePool, with prices, utilisation and disruption state",
		Long: `Show a cluster's nodes and in-flight NodeClaims grouped by NodePool: instance
type, zone, capacity type, $/h, cpu and memory requested against allocatable
as bars, pod counts, age and disruption state (drifted, expired,
consolidatable, disrupting and its reason, deleting, and blocked by a
do-not-disrupt annotation on the node or one of its pods), with the cluster's
totals ($/h, $/month, utilisation). The screen follows the cluster through
informers (one watch per kind); nothing is written to it.

Prices come from the embedded EC2 catalog (us-east-1), as for simulate and
explain, and from Karpenter's kwok instance types; nodes of other types show
"?" and are counted as unpriced.

Keys: s cycles the sort (name, $/h, cpu, memory, age), f shows the next
NodePool only, a shows all, j/k scroll, q quits.`,
		Example: `  # The cluster of "make up": export the KUBECONFIG it prints, then
  dovetail view

  # Any cluster
  dovetail view --kubeconfig ~/.kube/prod --context eu-west-1

  # One screen, for scripts
  dovetail view --once`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use")
	f.BoolVar(&o.Once, "once", false, "print one screen to standard output and exit")
	f.DurationVar(&o.Timeout, "timeout", o.Timeout, "how long to wait for the cluster to answer and the informers to sync")
	return cmd
}

// Run starts the informers and shows the view until q, or prints one
// screen with Once.
func (o *ViewOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	prices, err := view.DefaultPrices()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	src, err := view.StartSource(ctx, cfg, scheme, o.Timeout)
	if err != nil {
		return fmt.Errorf("dovetail view: %w", err)
	}
	objs, err := src.Objects(ctx)
	if err != nil {
		return err
	}
	m := view.NewModel(func() tea.Msg { return src.Next(ctx) }, prices, view.PricesNote)
	clk := o.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	m.Clock = clk
	if o.Once {
		now := clk.Now()
		t := view.Build(objs, view.Options{Now: now, Prices: prices})
		if _, err := fmt.Fprint(o.Out, view.Render(lipgloss.NewRenderer(o.Out), t, view.Screen{Now: now, Note: view.PricesNote})); err != nil {
			return fmt.Errorf("writing the screen: %w", err)
		}
		return nil
	}
	m.Update(view.ObjectsMsg{Objects: objs})
	m.Renderer = lipgloss.NewRenderer(o.Out)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(o.In), tea.WithOutput(o.Out), tea.WithAltScreen())
	if _, err := p.Run(); err != nil {
		return fmt.Errorf("running the view: %w", err)
	}
	return nil
}

// restConfig loads the kubeconfig as kubectl does: the path given, else
// $KUBECONFIG, else ~/.kube/config.
func (o *ViewOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if o.Kubeconfig != "" {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", o.Kubeconfig, err)
		}
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return cfg, nil
}
