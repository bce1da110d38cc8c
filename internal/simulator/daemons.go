package simulator

import (
	"cmp"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// daemon is a daemonset's pod template, compiled.
type daemon struct {
	name        string
	uid         types.UID
	alts        []creqs
	tolerations []corev1.Toleration
	req         resources.Vector
	ports       []hostPort
}

// daemonTolerations are the tolerations the daemonset controller adds to every
// daemon pod, so that daemons run on nodes that are starting or under pressure.
func daemonTolerations() []corev1.Toleration {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	return []corev1.Toleration{
		exists(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		exists(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule),
		exists(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule),
	}
}

// buildDaemons compiles the daemonsets and adds, to every instance type of
// every NodePool, the requests of the daemon pods that would run on a node of
// that type: those that tolerate the pool's taints and whose node
// requirements the pool and type allow.
func (m *Model) buildDaemons(s *Snapshot) {
	dss := nonNil(s.DaemonSets)
	slices.SortFunc(dss, func(a, b *appsv1.DaemonSet) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	scratch := m.res.New()
	for _, ds := range dss {
		pod := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
		d := &daemon{name: ds.Namespace + "/" + ds.Name, uid: ds.UID, req: m.res.New(), ports: podHostPorts(pod)}
		d.tolerations = append(slices.Clone(pod.Spec.Tolerations), daemonTolerations()...)
		if err := m.res.PodRequests(pod, d.req, scratch); err != nil {
			continue // an invalid daemonset cannot run anywhere, so it adds no overhead
		}
		alts, err := requirements.PodRequirements(pod)
		if err != nil {
			continue
		}
		for _, alt := range alts {
			d.alts = append(d.alts, compileReqs(m.keys, m.vals, alt))
		}
		m.daemons = append(m.daemons, d)
		for _, p := range m.pools {
			mask := m.daemonMask(p, d)
			for t := mask.First(); t >= 0; t = mask.Next(t + 1) {
				p.daemon[t].Add(d.req)
			}
			if !mask.Empty() && len(d.ports) > 0 {
				p.daemonPorts = append(p.daemonPorts, daemonPorts{ports: d.ports, types: mask})
			}
		}
	}
}

// daemonPorts are host ports a daemonset binds on the nodes of some of a
// pool's instance types.
type daemonPorts struct {
	ports []hostPort
	types bitset.Set
}

// daemonPortTypes returns the types of pool p on which a daemonset binds a
// host port that conflicts with ports, or nil when there are none. The
// result may be buf, reused.
func daemonPortTypes(p *pool, ports []hostPort, buf *bitset.Set) bitset.Set {
	var out bitset.Set
	for i := range p.daemonPorts {
		dp := &p.daemonPorts[i]
		if _, clash := portsConflict(dp.ports, ports); !clash {
			continue
		}
		if out == nil {
			if w := bitset.Words(p.nt); cap(*buf) < w {
				*buf = bitset.New(p.nt)
			} else {
				*buf = (*buf)[:w]
				clear(*buf)
			}
			out = *buf
		}
		out.Or(dp.types)
	}
	return out
}

// daemonMask returns the types of pool p whose nodes would run daemon d.
func (m *Model) daemonMask(p *pool, d *daemon) bitset.Set {
	out := bitset.New(p.nt)
	if p.invalid != "" {
		return out
	}
	if _, ok := tolerates(d.tolerations, p.taints, false); !ok {
		return out
	}
	for _, alt := range d.alts {
		reqs, ok := m.mergeForPool(m.vals, p, p.base, alt)
		if !ok {
			continue
		}
		mask := m.typeMask(p, reqs)
		mask.And(m.offeringMask(p, m.allowedPairs(p, reqs)))
		mask.And(p.viable)
		out.Or(mask)
	}
	return out
}

// reserveDaemons reserves room on a node that is still starting for the
// daemon pods that will land on it and are not bound yet.
func (m *Model) reserveDaemons(n *node) {
	for _, d := range m.daemons {
		if _, ok := tolerates(d.tolerations, n.taints, false); !ok {
			continue
		}
		matches := false
		for _, alt := range d.alts {
			if m.nodeMatches(n, alt) {
				matches = true
				break
			}
		}
		if !matches || m.nodeRunsDaemon(n, d) {
			continue
		}
		n.used.Add(d.req)
		n.ports = append(n.ports, d.ports...)
	}
}

func (m *Model) nodeRunsDaemon(n *node, d *daemon) bool {
	for _, pi := range n.pods {
		for _, ref := range pi.pod.OwnerReferences {
			if ref.Kind == "DaemonSet" && (ref.UID == d.uid && d.uid != "" || pi.pod.Namespace+"/"+ref.Name == d.name) {
				return true
			}
		}
	}
	return false
}
