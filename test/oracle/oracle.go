package oracle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	schedmetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// Report is the oracle's verdict on one problem.
type Report struct {
	// Name of the problem.
	Name string
	// Pods replayed, and Nodes they were replayed onto.
	Pods, Nodes int
	// Plugins that checked the pods, in order.
	Plugins []string
	// Rejections are the pods the scheduler would not bind to their planned
	// node, in the plan's order.
	Rejections []Rejection
	// Waiting are pods with an unbound claim of Immediate binding mode (or of
	// no class): the scheduler leaves them pending until the
	// persistent-volume controller binds the claim, which the replay cannot
	// foresee. They are not rejections.
	Waiting []Rejection
	// Elapsed is how long the replay took.
	Elapsed time.Duration
}

// Passed reports whether every pod passed on its planned node.
func (r *Report) Passed() bool { return len(r.Rejections) == 0 }

// String summarises the report, with the first rejections.
func (r *Report) String() string {
	s := fmt.Sprintf("%s: %d pods on %d nodes, %d rejected, %d waiting for a volume binding (%s)", r.Name, r.Pods, r.Nodes, len(r.Rejections), len(r.Waiting), r.Elapsed.Round(time.Millisecond))
	for i, rej := range r.Rejections {
		if i == 5 {
			s += fmt.Sprintf("; and %d more", len(r.Rejections)-i)
			break
		}
		s += "; " + rej.String()
	}
	return s
}

// Rejection is a pod a plugin refused on its planned node.
type Rejection struct {
	// Pod is namespace/name.
	Pod string
	// Node is the planned node.
	Node string
	// Plugin that refused, and at which extension point.
	Plugin string
	Phase  string
	// Reason is the plugin's message.
	Reason string
}

// String renders the rejection for messages.
func (r Rejection) String() string {
	return fmt.Sprintf("%s on %s: %s %s: %s", r.Pod, r.Node, r.Plugin, r.Phase, r.Reason)
}

// Check replays pr through the kube-scheduler's PreFilter and Filter plugins:
// NodeResourcesFit, NodeAffinity, TaintToleration, PodTopologySpread,
// InterPodAffinity and NodePorts always, VolumeBinding when the problem has
// persistent volume claims. Each pod is checked against its planned node as
// the cluster stands once the pods before it are bound, then bound there
// whatever the verdict, so one bad placement does not hide the next.
func Check(ctx context.Context, pr *replay.Problem) (*Report, error) {
	start := time.Now()
	// The plugins' parallelizer records goroutine metrics, which must be
	// registered first.
	schedmetrics.Register()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	snap := newSnapshot(pr)
	var objs []runtime.Object
	for _, ns := range pr.Namespaces {
		objs = append(objs, ns)
	}
	objs = append(objs, volumeObjects(pr.PersistentVolumes, pr.PersistentVolumeClaims, pr.StorageClasses)...)
	for _, n := range pr.Nodes {
		objs = append(objs, n)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	handle, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithSnapshotSharedLister(snap),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithParallelism(1),
	)
	if err != nil {
		return nil, fmt.Errorf("creating the framework handle: %w", err)
	}
	plugins, err := newPlugins(ctx, handle, len(pr.PersistentVolumeClaims) > 0)
	if err != nil {
		return nil, err
	}
	defer factory.Shutdown()
	defer cancel() // before Shutdown, which waits for the informers to stop
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, fmt.Errorf("syncing the %v informer", typ)
		}
	}

	rep := &Report{Name: pr.Name, Pods: len(pr.Bindings), Nodes: len(pr.Nodes)}
	for _, p := range plugins {
		rep.Plugins = append(rep.Plugins, p.Name())
	}
	for _, b := range pr.Bindings {
		ni, ok := snap.byName[b.Node]
		if !ok {
			rep.Rejections = append(rep.Rejections, Rejection{Pod: key(b.Pod), Node: b.Node, Plugin: "oracle", Reason: "no such node"})
			continue
		}
		if rej, ok := checkPod(ctx, plugins, snap, b.Pod, ni); !ok {
			if rej.Plugin == volumebinding.Name && strings.Contains(rej.Reason, "unbound immediate PersistentVolumeClaims") {
				rep.Waiting = append(rep.Waiting, rej)
			} else {
				rep.Rejections = append(rep.Rejections, rej)
			}
		}
		bound := b.Pod.DeepCopy()
		bound.Spec.NodeName = b.Node
		snap.add(ni, bound)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// checkPod runs one scheduling cycle's PreFilter and Filter plugins for pod
// against node ni only.
func checkPod(ctx context.Context, plugins []fwk.FilterPlugin, snap *snapshot, pod *corev1.Pod, ni *framework.NodeInfo) (Rejection, bool) {
	state := framework.NewCycleState()
	nodes := snap.list()
	skip := map[string]bool{}
	reject := func(p fwk.Plugin, phase string, st *fwk.Status) (Rejection, bool) {
		return Rejection{Pod: key(pod), Node: ni.Node().Name, Plugin: p.Name(), Phase: phase, Reason: st.Message()}, false
	}
	for _, p := range plugins {
		pre, ok := p.(fwk.PreFilterPlugin)
		if !ok {
			continue
		}
		res, st := pre.PreFilter(ctx, state, pod, nodes)
		switch {
		case st.IsSkip():
			skip[p.Name()] = true
			continue
		case !st.IsSuccess():
			return reject(p, "PreFilter", st)
		case res != nil && !res.AllNodes() && !res.NodeNames.Has(ni.Node().Name):
			return reject(p, "PreFilter", fwk.NewStatus(fwk.Unschedulable, "node not among the plugin's candidate nodes"))
		}
	}
	for _, p := range plugins {
		if skip[p.Name()] {
			continue
		}
		if st := p.Filter(ctx, state, pod, ni); !st.IsSuccess() {
			return reject(p, "Filter", st)
		}
	}
	return Rejection{}, true
}

// newPlugins builds the filter plugins with the kube-scheduler's default
// arguments, except that PodTopologySpread has no system default
// constraints (they are ScheduleAnyway, so they never filter).
func newPlugins(ctx context.Context, h fwk.Handle, volumes bool) ([]fwk.FilterPlugin, error) {
	fts := plfeature.Features{
		EnableNodeInclusionPolicyInPodTopologySpread: true,
		EnableMatchLabelKeysInPodTopologySpread:      true,
		EnableSidecarContainers:                      true,
		EnablePodLevelResources:                      true,
		EnableInPlacePodVerticalScaling:              true,
	}
	type factory struct {
		name string
		args runtime.Object
		new  func(context.Context, runtime.Object, fwk.Handle, plfeature.Features) (fwk.Plugin, error)
	}
	factories := []factory{
		{noderesources.Name, &config.NodeResourcesFitArgs{ScoringStrategy: &config.ScoringStrategy{
			Type:      config.LeastAllocated,
			Resources: []config.ResourceSpec{{Name: string(corev1.ResourceCPU), Weight: 1}, {Name: string(corev1.ResourceMemory), Weight: 1}},
		}}, noderesources.NewFit},
		{nodeaffinity.Name, &config.NodeAffinityArgs{}, nodeaffinity.New},
		{tainttoleration.Name, nil, tainttoleration.New},
		{nodeports.Name, nil, nodeports.New},
		{podtopologyspread.Name, &config.PodTopologySpreadArgs{DefaultingType: config.ListDefaulting}, podtopologyspread.New},
		{interpodaffinity.Name, &config.InterPodAffinityArgs{HardPodAffinityWeight: 1}, interpodaffinity.New},
	}
	if volumes {
		factories = append(factories, factory{volumebinding.Name, &config.VolumeBindingArgs{BindTimeoutSeconds: 600}, volumebinding.New})
	}
	var out []fwk.FilterPlugin
	var errs []error
	for _, f := range factories {
		p, err := f.new(ctx, f.args, h, fts)
		if err != nil {
			errs = append(errs, fmt.Errorf("creating plugin %s: %w", f.name, err))
			continue
		}
		fp, ok := p.(fwk.FilterPlugin)
		if !ok {
			errs = append(errs, fmt.Errorf("plugin %s has no Filter", f.name))
			continue
		}
		out = append(out, fp)
	}
	return out, errors.Join(errs...)
}
