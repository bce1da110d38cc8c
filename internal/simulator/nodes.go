package simulator

import (
	"cmp"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// node is an existing or in-flight node.
type node struct {
	idx          int32
	name         string
	pool         int // index into Model.pools, or -1
	poolName     string
	labels       []label // sorted by key id
	labelMap     map[string]string
	taints       []corev1.Taint // effective taints (see Node.Taints)
	alloc        resources.Vector
	used         resources.Vector // bound pods plus daemonsets expected on a starting node
	capacity     resources.Vector
	ports        []hostPort
	initialized  bool
	deleting     bool // marked for deletion: not a destination, pods do not count
	cordoned     bool
	class        int32 // nodes of a class share labels (hostname aside) and taints
	invalid      string
	snapshotPods []*corev1.Pod
	pods         []*podInfo
}

type label struct{ key, val int32 }

// value returns the node's value for key.
func (n *node) value(key int32) (int32, bool) {
	i, ok := slices.BinarySearchFunc(n.labels, key, func(l label, k int32) int { return cmp.Compare(l.key, k) })
	if !ok {
		return 0, false
	}
	return n.labels[i].val, true
}

// ephemeralTaint reports taints a starting node sheds on its own.
func ephemeralTaint(t corev1.Taint) bool {
	return slices.Contains(v1.KnownEphemeralTaintKeys, t.Key)
}

func (m *Model) buildNodes(s *Snapshot) {
	snap := slices.Clone(s.Nodes)
	slices.SortStableFunc(snap, func(a, b Node) int {
		if a.Disfavored != b.Disfavored {
			return cmp.Compare(boolInt(a.Disfavored), boolInt(b.Disfavored))
		}
		if a.Initialized != b.Initialized {
			return cmp.Compare(boolInt(!a.Initialized), boolInt(!b.Initialized))
		}
		return cmp.Compare(a.Name, b.Name)
	})
	poolIdx := map[string]int{}
	for i, p := range m.pools {
		poolIdx[p.name] = i
	}
	classes := map[string]int32{}
	var buf strings.Builder
	for _, sn := range snap {
		if _, dup := m.nodeByName[sn.Name]; dup {
			continue // a duplicate name cannot be told apart in placements; keep the first
		}
		n := &node{
			idx: int32(len(m.nodes)), name: sn.Name, pool: -1, poolName: sn.NodePool,
			labelMap: sn.Labels, initialized: sn.Initialized, deleting: sn.MarkedForDeletion,
			cordoned: sn.Unschedulable, snapshotPods: nonNil(sn.Pods),
		}
		if i, ok := poolIdx[sn.NodePool]; ok {
			n.pool = i
		}
		for k, v := range sn.Labels {
			n.labels = append(n.labels, label{m.keys.id(k), m.vals.id(v)})
		}
		if _, ok := sn.Labels[corev1.LabelHostname]; !ok {
			// Kubelet sets the hostname label; until it does, the node's name stands in.
			n.labels = append(n.labels, label{m.hostnameKey, m.vals.id(sn.Name)})
		}
		n.labels = append(n.labels, label{m.nodeNameKey, m.vals.id(sn.Name)})
		slices.SortFunc(n.labels, func(a, b label) int { return cmp.Compare(a.key, b.key) })
		var startup []corev1.Taint
		if n.pool >= 0 && m.pools[n.pool].np != nil {
			startup = m.pools[n.pool].np.Spec.Template.Spec.StartupTaints
		}
		for _, t := range sn.Taints {
			if !sn.Initialized && (ephemeralTaint(t) || slices.ContainsFunc(startup, func(st corev1.Taint) bool { return st.MatchTaint(&t) })) {
				continue
			}
			n.taints = append(n.taints, t)
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				m.anyPreferNoSchedule = true
			}
		}
		n.alloc = m.res.New()
		if err := m.res.AddTo(n.alloc, sn.Allocatable); err != nil {
			n.invalid = "node " + sn.Name + " has invalid allocatable: " + err.Error()
		}
		n.capacity = m.res.New()
		capList := sn.Capacity
		if len(capList) == 0 {
			capList = sn.Allocatable
		}
		_ = m.res.AddTo(n.capacity, capList) // invalid capacity counts as zero against limits
		n.used = m.res.New()

		buf.Reset()
		buf.WriteString(sn.NodePool)
		buf.WriteByte(0)
		for _, l := range n.labels {
			if l.key == m.hostnameKey || l.key == m.nodeNameKey {
				continue
			}
			buf.WriteString(m.keys.str(l.key))
			buf.WriteByte('=')
			buf.WriteString(m.vals.str(l.val))
			buf.WriteByte(0)
		}
		for _, t := range n.taints {
			buf.WriteString(t.ToString())
			buf.WriteByte(0)
		}
		c, ok := classes[buf.String()]
		if !ok {
			c = int32(len(classes))
			classes[buf.String()] = c
		}
		n.class = c
		m.nodeByName[n.name] = n.idx
		m.nodes = append(m.nodes, n)
	}
	m.classes = int32(len(classes))
}

// finishNodes sums what is already used on each node and, when no NodePool
// usage was given, what each pool's nodes count against its limits.
func (m *Model) finishNodes() {
	for _, pi := range m.bound {
		n := m.nodes[pi.node]
		n.pods = append(n.pods, pi)
		n.used.Add(pi.req)
		n.ports = append(n.ports, pi.sig.ports...)
	}
	for _, n := range m.nodes {
		if !n.initialized {
			m.reserveDaemons(n)
		}
	}
	for _, p := range m.pools {
		if p.np == nil || p.usage == nil || p.usageGiven {
			continue
		}
		for _, n := range m.nodes {
			if n.poolName == p.name {
				p.usage.Add(n.capacity)
				p.usageNodes++
			}
		}
	}
}

func nonNil[T any](in []*T) []*T {
	out := make([]*T, 0, len(in))
	for _, x := range in {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

// tolerates reports whether tolerations tolerate every taint with an effect
// that blocks scheduling. PreferNoSchedule blocks unless preferNoSchedule is
// false (the preference was relaxed or is ignored).
func tolerates(tolerations []corev1.Toleration, taints []corev1.Taint, preferNoSchedule bool) (corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !preferNoSchedule {
			continue
		}
		ok := false
		for j := range tolerations {
			if tolerations[j].ToleratesTaint(logr.Discard(), t, true) {
				ok = true
				break
			}
		}
		if !ok {
			return *t, false
		}
	}
	return corev1.Taint{}, true
}
