package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
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

// The clouds the demo runs on.
const (
	// CloudAWS runs the AWS provider against a local AWS endpoint: an
	// EC2NodeClass, EC2 instances that boot as Nodes.
	CloudAWS = "aws"
	// CloudKwok runs the kwok provider: a KWOKNodeClass, simulated nodes.
	CloudKwok = "kwok"
)

// Options configure the demo.
type Options struct {
	// Cloud is CloudAWS (the default when empty) or CloudKwok.
	Cloud string
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
	// UnusedLaunches counts the scale-out's launches no pod needed, once
	// every pod ran: NodeClaims without a node (still launching) plus
	// nodes that run none of the pods and that no pod was planned onto.
	UnusedLaunches int
	// HandOffMisses counts the nodes that run none of the pods although
	// pods were planned onto them: the kube-scheduler bound those pods
	// elsewhere, before their node registered or while their zonal
	// topology spread kept them unnominated (README, "Plan hand-off").
	HandOffMisses int
	// PodsOnPlan and PodsOffPlan count the scale-out's pods the
	// kube-scheduler bound to the node their Nominated event named, or to
	// another.
	PodsOnPlan, PodsOffPlan int
	// After the load drops: the nodes and price consolidation settled on.
	ConsolidatedNodes     int
	ConsolidatedCost      float64
	ConsolidationDuration time.Duration

	// On CloudAWS: whether the EC2NodeClass became Ready, the EC2 instances
	// launched and terminated over the whole demo, and the instances still
	// pending or running after the cleanup.
	NodeClassReady       bool
	InstancesLaunched    int
	InstancesTerminated  int
	InstancesLeftRunning int
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
	// ec2 is the AWS side of the story; nil on CloudKwok.
	ec2 *ec2Story
}

// Run tells the story and returns what it measured.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StepTimeout == 0 {
		opts.StepTimeout = 2 * time.Minute
	}
	if opts.Cloud == "" {
		opts.Cloud = CloudAWS
	}
	if opts.Cloud != CloudAWS && opts.Cloud != CloudKwok {
		return nil, fmt.Errorf("cloud %q is not supported (supported: %s, %s)", opts.Cloud, CloudAWS, CloudKwok)
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
	steps := []func(context.Context) error{s.provision, s.drain, s.consolidate}
	if s.ec2 != nil {
		steps = append([]func(context.Context) error{s.applyEC2Defaults}, append(steps, s.cleanupEC2)...)
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return &s.summary, err
		}
	}
	s.printSummary()
	if s.ec2 != nil {
		if err := s.printEC2Summary(ctx); err != nil {
			return &s.summary, err
		}
	}
	return &s.summary, nil
}

// start brings up the cluster and the controller; stop undoes both. On
// CloudAWS the cluster has a local AWS endpoint and no NodePool yet
// (applyEC2Defaults creates it); on CloudKwok it has the default
// KWOKNodeClass and NodePool.
//
// While the demo runs, the process's standard logger writes to the
// controller's log: Go's HTTP servers (the conversion webhook's among them)
// report errors such as TLS handshake failures there, which would otherwise
// interleave with the narration.
func (s *story) start(ctx context.Context) (func(), error) {
	began := s.clock.Now()
	cpOpts := controlplane.Options{BinDir: s.opts.BinDir, KeepWorkDir: s.opts.KeepWorkDir}
	var cluster *localcluster.Cluster
	var err error
	if s.opts.Cloud == CloudAWS {
		fmt.Fprint(s.out, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok and a local AWS endpoint ... ")
		cluster, err = localcluster.StartAWS(ctx, cpOpts, localcluster.AWSOptions{}, false)
	} else {
		fmt.Fprint(s.out, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok ... ")
		cluster, err = localcluster.Start(ctx, cpOpts, true)
	}
	if err != nil {
		fmt.Fprintln(s.out, "failed")
		return nil, err
	}
	s.cluster = cluster
	if cluster.AWS != nil {
		s.ec2 = newEC2Story(cluster.AWS)
	}
	if s.clientset, err = kubernetes.NewForConfig(cluster.ControlPlane.RESTConfig); err != nil {
		return nil, errors.Join(fmt.Errorf("creating clientset: %w", err), cluster.Stop())
	}
	logPath := filepath.Join(cluster.ControlPlane.LogDir, "dovetail.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("creating controller log: %w", err), cluster.Stop())
	}
	stdLog := log.Writer()
	log.SetOutput(logFile)
	opOpts := localcluster.OperatorOptions()
	if s.ec2 != nil {
		opOpts = localcluster.AWSOperatorOptions()
	}
	opOpts.LogWriter = logFile
	// LOG_LEVEL sets the controller log's level, as it does the
	// controller's (debug logs each plan, nomination and refusal).
	if level := os.Getenv("LOG_LEVEL"); level != "" {
		opOpts.LogLevel = level
	}
	opOpts.DisruptionValidationDelay = demoValidationDelay
	var controller *localcluster.Controller
	if s.ec2 != nil {
		controller, err = cluster.StartAWSController(ctx, opOpts, cluster.AWSSettings())
	} else {
		controller, err = cluster.StartController(ctx, opOpts, compose.KwokOptions{})
	}
	if err != nil {
		log.SetOutput(stdLog)
		_ = logFile.Close()
		return nil, errors.Join(err, cluster.Stop())
	}
	fmt.Fprintf(s.out, "ok (%s)\n", s.since(began))
	if s.ec2 != nil {
		fmt.Fprintln(s.out, "Dovetail is running with its AWS provider, which talks to the local AWS endpoint with the")
		fmt.Fprintln(s.out, "AWS SDK exactly as it would talk to AWS.")
	} else {
		fmt.Fprintln(s.out, "Dovetail is running with the default NodePool: c, m and r instances of generation > 2,")
		fmt.Fprintln(s.out, "spot or on-demand, in us-east-1a/b/c, priced from the embedded EC2 catalog.")
	}
	if s.opts.KeepWorkDir {
		fmt.Fprintf(s.out, "Controller log: %s\n", logPath)
	}
	return func() {
		fmt.Fprint(s.out, "\nStopping the controller and the control plane ... ")
		errs := []error{controller.Stop(), cluster.Stop()}
		log.SetOutput(stdLog)
		errs = append(errs, logFile.Close())
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
		if s.ec2 != nil {
			line = fmt.Sprintf("pending %-3d running %-3d nodeclaims %-3d EC2 instances %-3d nodes ready %d",
				p.pending, p.running, p.claims, len(s.ec2.running()), p.readyNodes)
		}
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
	launched := ""
	if s.ec2 != nil {
		fresh, _ := s.ec2.observe()
		launched = fmt.Sprintf(" %d EC2 instances (CreateFleet), booted as", len(fresh))
	}
	fmt.Fprintf(s.out, "All %d pods Running %s after the workloads were created. Dovetail launched%s:\n\n", total, s.since(began), launched)
	f, err := s.printNodes(ctx)
	if err != nil {
		return err
	}
	s.summary.Nodes, s.summary.Spot, s.summary.CostPerHour = f.nodes, f.spot, f.cost
	// Every NodeClaim of the scale-out, registered or not: one beyond the
	// nodes, or a node without pods that no pod was planned onto, is a
	// launch no pod needed. A node whose planned pods the kube-scheduler
	// bound elsewhere is a hand-off the scheduler did not follow.
	p, err := s.progress(ctx)
	if err != nil {
		return err
	}
	followed, err := s.followPlan(ctx, f.list)
	if err != nil {
		return err
	}
	s.summary.UnusedLaunches = max(p.claims-f.nodes, 0) + followed.unused
	s.summary.HandOffMisses = followed.missed
	s.summary.PodsOnPlan, s.summary.PodsOffPlan = followed.onPlan, followed.offPlan
	switch {
	case s.summary.UnusedLaunches > 0:
		fmt.Fprintf(s.out, "\n%d NodeClaims for %d nodes, %d of the nodes running none of the pods and planned for none.\n", p.claims, f.nodes, followed.unused)
	case followed.missed > 0:
		fmt.Fprintf(s.out, "\nEach of the %d NodeClaims became a node; %d of them runs none of the pods: the kube-scheduler bound the pods planned for it elsewhere.\n", p.claims, followed.missed)
	default:
		fmt.Fprintf(s.out, "\nEach of the %d NodeClaims became a node that runs pods.\n", p.claims)
	}
	fmt.Fprintf(s.out, "The kube-scheduler bound %d of the %d pods to the node Dovetail planned for them", followed.onPlan, total)
	if followed.offPlan > 0 {
		fmt.Fprintf(s.out, ", %d to another", followed.offPlan)
	}
	if followed.unplanned > 0 {
		fmt.Fprintf(s.out, "; %d had no plan of their own", followed.unplanned)
	}
	fmt.Fprintln(s.out, ".")
	return nil
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

// fleet is what printNodes counted: the nodes, the spot ones among them,
// and the nodes' price; and the nodes themselves.
type fleet struct {
	nodes, spot int
	cost        float64
	// list is the nodes printed, for what the caller reads of them next.
	list []corev1.Node
}

// printNodes shows each node with its type, zone, capacity type, price and
// pods, and returns what it counted.
func (s *story) printNodes(ctx context.Context) (fleet, error) {
	var f fleet
	nodes, err := s.nodes(ctx)
	if err != nil {
		return f, err
	}
	pods := &corev1.PodList{}
	if err := s.cluster.Client.List(ctx, pods, client.InNamespace(Namespace)); err != nil {
		return f, err
	}
	perNode := map[string]map[string]int{}
	for _, pod := range pods.Items {
		if perNode[pod.Spec.NodeName] == nil {
			perNode[pod.Spec.NodeName] = map[string]int{}
		}
		perNode[pod.Spec.NodeName][pod.Labels["app"]]++
	}
	// On CloudAWS each node also shows its EC2 instance and AMI.
	var instances map[string][2]string
	ec2Header, ec2Blank := "", ""
	if s.ec2 != nil {
		if instances, err = s.instanceColumns(ctx); err != nil {
			return f, err
		}
		ec2Header, ec2Blank = "INSTANCE\tAMI\t", "\t\t"
	}
	w := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "  NODE\t%sTYPE\tZONE\tCAPACITY\t$/H\tPODS\n", ec2Header)
	for _, n := range nodes {
		price := s.prices.OfLabels(n.Labels)
		f.cost += price
		if n.Labels[v1.CapacityTypeLabelKey] == v1.CapacityTypeSpot {
			f.spot++
		}
		ec2Cols := ""
		if s.ec2 != nil {
			cols := instances[n.Name]
			if cols[0] == "" {
				cols[0] = instanceID(n.Spec.ProviderID)
			}
			ec2Cols = cols[0] + "\t" + cols[1] + "\t"
		}
		fmt.Fprintf(w, "  %s\t%s%s\t%s\t%s\t%.4f\t%s\n", n.Name, ec2Cols, n.Labels[corev1.LabelInstanceTypeStable], n.Labels[corev1.LabelTopologyZone],
			n.Labels[v1.CapacityTypeLabelKey], price, podSummary(perNode[n.Name]))
	}
	fmt.Fprintf(w, "  total\t%s\t\t\t%.4f\t%d pods on %d nodes\n", ec2Blank, f.cost, len(pods.Items), len(nodes))
	f.nodes, f.list = len(nodes), nodes
	return f, w.Flush()
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
