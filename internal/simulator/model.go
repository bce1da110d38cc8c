package simulator

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// Model is a Snapshot indexed for simulation. It is immutable once New
// returns: Solve keeps its own state and never writes to the model, so a
// model can serve any number of solves, concurrently.
type Model struct {
	opts Options
	res  *resources.Index

	keys, vals                                            *interner
	hostnameKey, nodeNameKey, zoneKey, ctKey, nodePoolKey int32

	pools []*pool // by weight (descending), then name (descending), as Karpenter orders them

	nodes      []*node // initialized first, then by name
	nodeByName map[string]int32
	classes    int32

	sigs     []*podSig
	sigByKey map[string]*podSig
	views    int32 // number of views handed out; solve-local views continue from here

	pending    []*podInfo // the snapshot's pending pods
	podByPtr   map[*corev1.Pod]*podInfo
	bound      []*podInfo // pods bound to nodes
	boundByUID map[types.UID]*podInfo

	tgs     []*tg
	tgByDef map[string]int32
	tgIndex tgIndex
	slots   map[int32]*slotMap // per topology key (hostname excepted): value -> slot

	daemons []*daemon

	pvs        map[string]*corev1.PersistentVolume
	pvcs       map[string]*corev1.PersistentVolumeClaim // namespace/name
	scs        map[string]*storageClass
	defaultSC  string
	namespaces map[string]map[string]string // name -> labels

	anyPreferNoSchedule bool
}

// storageClass is the part of a StorageClass volume topology needs.
type storageClass struct {
	name       string
	topologies []corev1.TopologySelectorTerm
}

// podInfo is one pod with its compiled signature and requests.
type podInfo struct {
	pod     *corev1.Pod
	sig     *podSig
	req     resources.Vector
	invalid string  // a reason the pod cannot be placed at all
	node    int32   // bound node, or -1
	refused []int32 // existing nodes the pod is not placed on (Snapshot.Refused)
	// deferred pods are placed after every other pod (Snapshot.Deferred).
	deferred bool
	order    int // position in the solve's queue
	level    int // preference-relaxation level reached
}

// New indexes a snapshot. It never fails: problems with the input (invalid
// requirements, unparsable quantities, instance types without offerings)
// become reasons in the plans of pods they affect.
func New(s *Snapshot, opts Options) *Model {
	if s == nil {
		s = &Snapshot{}
	}
	m := &Model{
		opts:       opts.withDefaults(),
		res:        resources.NewIndex(),
		keys:       newInterner(),
		vals:       newInterner(),
		nodeByName: map[string]int32{},
		sigByKey:   map[string]*podSig{},
		podByPtr:   map[*corev1.Pod]*podInfo{},
		boundByUID: map[types.UID]*podInfo{},
		tgByDef:    map[string]int32{},
		slots:      map[int32]*slotMap{},
	}
	m.hostnameKey = m.keys.id(corev1.LabelHostname)
	m.nodeNameKey = m.keys.id(requirements.NodeNameField)
	m.zoneKey = m.keys.id(corev1.LabelTopologyZone)
	m.ctKey = m.keys.id(v1.CapacityTypeLabelKey)
	m.nodePoolKey = m.keys.id(v1.NodePoolLabelKey)

	m.registerResources(s)
	m.indexVolumes(s)
	m.indexNamespaces(s)

	// 1. NodePools, ordered as Karpenter orders them.
	nps := slices.Clone(s.NodePools)
	slices.SortStableFunc(nps, func(a, b NodePool) int {
		if a.NodePool == nil || b.NodePool == nil {
			return cmp.Compare(boolInt(a.NodePool == nil), boolInt(b.NodePool == nil))
		}
		if c := cmp.Compare(ptrOr(b.NodePool.Spec.Weight, 0), ptrOr(a.NodePool.Spec.Weight, 0)); c != 0 {
			return c
		}
		return cmp.Compare(b.NodePool.Name, a.NodePool.Name)
	})
	for i, np := range nps {
		p := m.buildPool(i, np)
		m.pools = append(m.pools, p)
		for _, t := range p.taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				m.anyPreferNoSchedule = true
			}
		}
	}

	// 2. Existing and in-flight nodes with their pods.
	m.buildNodes(s)

	// 3. Pods: compile every pending and bound pod into shared signatures.
	comp := m.compiler()
	for _, pod := range s.Pods {
		if pod == nil {
			continue
		}
		pi := comp.compilePod(pod)
		pi.deferred = s.Deferred[pod.UID]
		for _, name := range s.Refused[pod.UID] {
			if i, ok := m.nodeByName[name]; ok {
				pi.refused = append(pi.refused, i)
			}
		}
		m.pending = append(m.pending, pi)
		m.podByPtr[pod] = pi
	}
	for n, nd := range m.nodes {
		for _, pod := range nd.snapshotPods {
			pi := comp.compilePod(pod)
			pi.node = int32(n)
			m.bound = append(m.bound, pi)
			m.podByPtr[pod] = pi
			if pod.UID != "" {
				m.boundByUID[pod.UID] = pi
			}
		}
	}

	// 4. Daemonsets: overhead on new nodes, and on nodes still starting.
	m.buildDaemons(s)
	for _, p := range m.pools {
		m.finishPool(p)
	}
	m.finishNodes()

	// 5. Topology: who selects whom, domain slots, counts of bound pods.
	m.finishTopology()
	m.buildViews()
	return m
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registerResources gives every resource name in the snapshot a vector dimension.
func (m *Model) registerResources(s *Snapshot) {
	for _, np := range s.NodePools {
		for _, it := range np.InstanceTypes {
			if it != nil {
				m.res.AddNames(it.Capacity)
			}
		}
	}
	for i := range s.Nodes {
		m.res.AddNames(s.Nodes[i].Allocatable)
	}
	// Resources only pods request get a dimension too (with zero capacity
	// everywhere), so the reason names the resource instead of failing to parse.
	addPod := func(pod *corev1.Pod) {
		if pod == nil {
			return
		}
		for i := range pod.Spec.InitContainers {
			m.res.AddNames(pod.Spec.InitContainers[i].Resources.Requests)
		}
		for i := range pod.Spec.Containers {
			m.res.AddNames(pod.Spec.Containers[i].Resources.Requests)
		}
		m.res.AddNames(pod.Spec.Overhead)
	}
	for _, pod := range s.Pods {
		addPod(pod)
	}
	for i := range s.Nodes {
		for _, pod := range s.Nodes[i].Pods {
			addPod(pod)
		}
	}
	for _, ds := range s.DaemonSets {
		if ds != nil {
			addPod(&corev1.Pod{Spec: ds.Spec.Template.Spec})
		}
	}
}

func (m *Model) indexNamespaces(s *Snapshot) {
	m.namespaces = map[string]map[string]string{}
	for _, ns := range s.Namespaces {
		if ns != nil {
			m.namespaces[ns.Name] = ns.Labels
		}
	}
}
