package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// Options configure the demo.
type Options struct {
	// BinDir holds the control-plane binaries.
	BinDir string
	// KeepWorkDir keeps the control plane's logs (including dovetail.log).
	KeepWorkDir bool
	// Out receives the narration.
	Out io.Writer
	// Clock paces the progress lines; the real clock when nil.
	Clock clock.Clock
	// StepTimeout bounds each step; two minutes when zero.
	StepTimeout time.Duration
}

// Summary is what the demo measured.
type Summary struct {
	Pods            int
	Nodes           int
	Spot            int
	CostPerHour     float64
	TimeToRunning   time.Duration
	DrainedNode     string
	DrainDuration   time.Duration
	MinAPIAvailable int
	// After the load drops: the nodes and price consolidation settled on.
	ConsolidatedNodes     int
	ConsolidatedCost      float64
	ConsolidationDuration time.Duration
}

// story carries the demo's state between steps.
type story struct {
	opts      Options
	out       io.Writer
	clock     clock.Clock
	cluster   *localcluster.Cluster
	clientset kubernetes.Interface
	prices    catalog.Prices
	summary   Summary
}

// Run tells the story and returns what it measured.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 2 * time.Minute
	}
	s := &story{opts: opts, out: opts.Out, clock: opts.Clock}
	var err error
	if s.prices, err = catalog.LoadPrices(catalog.DefaultOptions()); err != nil {
		return nil, err
	}
	fmt.Fprintln(s.out, "Dovetail demo: Karpenter-compatible node autoscaling on a local control plane")
	fmt.Fprintln(s.out, strings.Repeat("=", 78))
	stop, err := s.start(ctx)
	if err != nil {
		return nil, err
	}
	defer stop()
	for _, step := range []func(context.Context) error{s.provision, s.drain, s.consolidate} {
		if err := step(ctx); err != nil {
			return &s.summary, err
		}
	}
	s.printSummary()
	return &s.summary, nil
}

// start brings up the cluster and the controller; stop undoes both.
func (s *story) start(ctx context.Context) (func(), error) {
	began := s.clock.Now()
	fmt.Fprint(s.out, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok ... ")
	cluster, err := localcluster.Start(ctx, controlplane.Options{BinDir: s.opts.BinDir, KeepWorkDir: s.opts.KeepWorkDir}, true)
	if err != nil {
		fmt.Fprintln(s.out, "failed")
		return nil, err
	}
	s.cluster = cluster
	if s.clientset, err = kubernetes.NewForConfig(cluster.ControlPlane.RESTConfig); err != nil {
		return nil, errors.Join(fmt.Errorf("creating clientset: %w", err), cluster.Stop())
	}
	logPath := filepath.Join(cluster.ControlPlane.LogDir, "dovetail.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating controller log: %w", err), cluster.Stop())
	}
	opOpts := localcluster.OperatorOptions()
	opOpts.LogWriter = logFile
	opOpts.DisruptionValidationDelay = demoValidationDelay
	controller, err := cluster.StartController(ctx, opOpts, compose.KwokOptions{})
	if err != nil {
		_ = logFile.Close()
		return nil, errors.Join(err, cluster.Stop())
	}
	fmt.Fprintf(s.out, "ok (%s)\n", s.since(began))
	fmt.Fprintln(s.out, "Dovetail is running with the default NodePool: c, m and r instances of generation > 2,")
	fmt.Fprintln(s.out, "spot or on-demand, in us-east-1a/b/c, priced from the embedded EC2 catalog.")
	if s.opts.KeepWorkDir {
		fmt.Fprintf(s.out, "Controller log: %s\n", logPath)
	}
	return func() {
		fmt.Fprint(s.out, "\nStopping the controller and the control plane ... ")
		errs := []error{controller.Stop(), logFile.Close(), cluster.Stop()}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(s.out, "error: %v\n", err)
			return
		}
		fmt.Fprintln(s.out, "done.")
	}, nil
}

// provision deploys the workloads and waits until every pod runs.
func (s *story) provision(ctx context.Context) error {
	fmt.Fprintln(s.out, "\nStep 1/3  Three workloads arrive on a cluster with no nodes:")
	c := s.cluster.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}); err != nil {
		return fmt.Errorf("creating namespace: %w", err)
	}
	if err := c.Create(ctx, apiPDB()); err != nil {
		return fmt.Errorf("creating the api PodDisruptionBudget: %w", err)
	}
	total := 0
	for _, w := range workloads() {
		fmt.Fprintf(s.out, "  %-6s %2d x %-5s / %-6s %s\n", w.name, w.replicas, w.cpu, w.memory, w.describe)
		total += int(w.replicas)
	}
	began := s.clock.Now()
	for _, w := range workloads() {
		if err := c.Create(ctx, w.deployment()); err != nil {
			return fmt.Errorf("creating deployment %s: %w", w.name, err)
		}
	}
	last := ""
	err := s.until(ctx, func(ctx context.Context) (bool, error) {
		p, err := s.progress(ctx)
		if err != nil {
			return false, err
		}
		line := fmt.Sprintf("pending %-3d running %-3d nodeclaims %-3d nodes ready %d", p.pending, p.running, p.claims, p.readyNodes)
		if line != last {
			fmt.Fprintf(s.out, "  [%6s] %s\n", s.since(began), line)
			last = line
		}
		return p.running == total && p.pending == 0, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for every pod to run: %w", err)
	}
	s.summary.Pods, s.summary.TimeToRunning = total, s.clock.Since(began)
	fmt.Fprintf(s.out, "All %d pods Running %s after the workloads were created. Dovetail launched:\n\n", total, s.since(began))
	var err2 error
	s.summary.Nodes, s.summary.Spot, s.summary.CostPerHour, err2 = s.printNodes(ctx)
	return err2
}

// progress counts the demo's pods, the NodeClaims and the ready nodes.
type progress struct{ pending, running, claims, readyNodes int }

func (s *story) progress(ctx context.Context) (progress, error) {
	var p progress
	pods := &corev1.PodList{}
	if err := s.cluster.Client.List(ctx, pods, client.InNamespace(Namespace)); err != nil {
		return p, err
	}
	for _, pod := range pods.Items {
		switch {
		case pod.DeletionTimestamp != nil:
		case pod.Status.Phase == corev1.PodRunning:
			p.running++
		default:
			p.pending++
		}
	}
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return p, err
	}
	p.claims = len(claims.Items)
	nodes, err := s.nodes(ctx)
	if err != nil {
		return p, err
	}
	for _, n := range nodes {
		if n.Labels[v1.NodeInitializedLabelKey] == "true" {
			p.readyNodes++
		}
	}
	return p, nil
}

func (s *story) nodes(ctx context.Context) ([]corev1.Node, error) {
	nodes := &corev1.NodeList{}
	if err := s.cluster.Client.List(ctx, nodes, client.HasLabels{v1.NodePoolLabelKey}); err != nil {
		return nil, err
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	return nodes.Items, nil
}

// listNodes counts the nodes, the spot ones among them, and their price.
func (s *story) listNodes(ctx context.Context) (nodes, spot int, cost float64, err error) {
	list, err := s.nodes(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, n := range list {
		cost += s.prices.OfLabels(n.Labels)
		if n.Labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeSpot {
			spot++
		}
	}
	return len(list), spot, cost, nil
}

// printNodes shows each node with its type, zone, capacity type, price and
// pods, and returns the count of nodes and spot nodes and their price.
func (s *story) printNodes(ctx context.Context) (count, spot int, cost float64, err error) {
	nodes, err := s.nodes(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	pods := &corev1.PodList{}
	if err := s.cluster.Client.List(ctx, pods, client.InNamespace(Namespace)); err != nil {
		return 0, 0, 0, err
	}
	perNode := map[string]map[string]int{}
	for _, pod := range pods.Items {
		if perNode[pod.Spec.NodeName] == nil {
			perNode[pod.Spec.NodeName] = map[string]int{}
		}
		perNode[pod.Spec.NodeName][pod.Labels["app"]]++
	}
	w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "  NODE\tTYPE\tZONE\tCAPACITY\t$/H\tPODS")
	for _, n := range nodes {
		price := s.prices.OfLabels(n.Labels)
		cost += price
		if n.Labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeSpot {
			spot++
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%.4f\t%s\n", n.Name, n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone],
			n.Labels[v1.CapacityTypeLabelKey], price, podSummary(perNode[n.Name]))
	}
	fmt.Fprintf(w, "  total\t\t\t\t%.4f\t%d pods on %d nodes\n", cost, len(pods.Items), len(nodes))
	return len(nodes), spot, cost, w.Flush()
}

func podSummary(apps map[string]int) string {
	names := make([]string, 0, len(apps))
	for name := range apps {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s x%d", name, apps[name]))
	}
	return strings.Join(parts, ", ")
}
