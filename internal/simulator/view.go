package simulator

import (
	"cmp"
	"fmt"
	"slices"
)

// maxAlternatives caps how many node-requirement alternatives one pod expands
// to (required affinity terms times volume topology combinations).
const maxAlternatives = 64

// podView is a signature at one preference-relaxation level: the
// constraints placement actually checks.
type podView struct {
	id    int32
	sig   *podSig
	level int

	nodeAlts   []creqs  // a node must satisfy one of these
	altSrc     []string // where each alternative comes from
	domainAlts []creqs  // the pod's own (strict) requirements, for topology domains
	noAlt      string   // why no alternative is satisfiable, if none is

	tolerateSoft bool // PreferNoSchedule taints are tolerated
	groups       []keyGroup
	perNode      bool // requirements on the hostname or node name: check nodes one by one
	relaxed      []string
}

// keyGroup is a pod's topology constraints on one key.
type keyGroup struct {
	key      int32
	hostname bool
	refs     []tgRef
}

type role uint8

const (
	roleSpread   role = iota // the pod's spread constraint
	roleAffinity             // the pod's pod-affinity term
	roleAnti                 // the pod's pod-anti-affinity term
	roleInverse              // another pod's required anti-affinity selects this pod
	roleCounted              // a group on a key other than the hostname counts the pod
)

type tgRef struct {
	tg   int32
	role role
	self bool // the group selects the pod itself
}

func (m *Model) buildViews() {
	for _, sig := range m.sigs {
		m.sigViews(sig, m.vals, &m.views, m.tgs, 0)
	}
}

// sigViews builds one view per relaxation level of sig.
func (m *Model) sigViews(sig *podSig, vals *interner, next *int32, groups []*tg, base int32) {
	sig.views = make([]*podView, len(sig.steps)+1)
	for level := range sig.views {
		v := m.buildView(sig, level, vals, groups, base)
		v.id = *next
		*next++
		sig.views[level] = v
	}
}

func (m *Model) buildView(sig *podSig, level int, vals *interner, groups []*tg, base int32) *podView {
	v := &podView{sig: sig, level: level, domainAlts: sig.strict}
	removed := map[relaxKind][]int{}
	for _, st := range sig.steps[:level] {
		removed[st.kind] = append(removed[st.kind], st.index)
		v.relaxed = append(v.relaxed, describeStep(sig, st))
	}
	v.tolerateSoft = !m.anyPreferNoSchedule || len(removed[relaxPreferNoSchedule]) > 0

	// Node alternatives: strict term x volume combination, narrowed by the
	// heaviest preferred node-affinity term not yet relaxed.
	var pref creqs
	prefSrc := ""
	for i := range sig.prefNode {
		if !slices.Contains(removed[relaxNodeAffinity], i) {
			pref = sig.prefNode[i]
			prefSrc = fmt.Sprintf(" and preferred node affinity (weight %d)", sig.prefWeight[i])
			break
		}
	}
	vols := sig.volumes
	if vols == nil {
		vols = []creqs{nil}
	}
	for i, strict := range sig.strict {
		for _, vol := range vols {
			if len(v.nodeAlts) == maxAlternatives {
				break
			}
			alt := and(vals, and(vals, strict, vol), pref)
			if !alt.satisfiable() {
				continue
			}
			src := sig.strictSrc[i] + prefSrc
			if vol != nil {
				src += " and " + sig.volumeSrc
			}
			v.nodeAlts = append(v.nodeAlts, alt)
			v.altSrc = append(v.altSrc, src)
		}
	}
	if len(v.nodeAlts) == 0 && sig.invalid == "" {
		v.noAlt = "the pod's node requirements conflict with each other"
		if len(sig.volumes) > 0 {
			v.noAlt = "the pod's node requirements conflict with the topology of its volumes (" + sig.volumeSrc + ")"
		}
		if pref != nil {
			v.noAlt = "the pod's preferred node affinity conflicts with its requirements"
		}
	}
	for _, alt := range v.nodeAlts {
		for i := range alt {
			if alt[i].key == m.hostnameKey || alt[i].key == m.nodeNameKey {
				v.perNode = true
			}
		}
	}

	// Topology constraints still in force.
	var refs []tgRef
	selected := func(id int32) bool { return slices.Contains(sig.selectedBy, id) }
	for i, t := range sig.spreads {
		if t.required || !slices.Contains(removed[relaxSpread], i) {
			refs = append(refs, tgRef{tg: t.tg, role: roleSpread, self: selected(t.tg)})
		}
	}
	for i, t := range sig.affinity {
		if t.required || !slices.Contains(removed[relaxPodAffinity], i) {
			refs = append(refs, tgRef{tg: t.tg, role: roleAffinity, self: selected(t.tg)})
		}
	}
	for i, t := range sig.anti {
		if t.required || !slices.Contains(removed[relaxPodAntiAffinity], i) {
			refs = append(refs, tgRef{tg: t.tg, role: roleAnti, self: selected(t.tg)})
		}
	}
	for _, id := range sig.inverse {
		refs = append(refs, tgRef{tg: id, role: roleInverse, self: true})
	}
	groupOf := func(id int32) *tg { return groups[id-base] }
	if base > 0 {
		groupOf = func(id int32) *tg {
			if id < base {
				return m.tgs[id]
			}
			return groups[id-base]
		}
	}
	// A group on a zone-like key that counts the pod makes the pod's domain
	// matter to other pods: a claim that takes the pod settles that domain
	// at once, so the pod is counted where it lands from the moment it is
	// placed, never later (see solve.chooseDomain).
	for _, id := range sig.selectedBy {
		if t := groupOf(id); !t.hostname && !slices.ContainsFunc(refs, func(r tgRef) bool { return r.tg == id }) {
			refs = append(refs, tgRef{tg: id, role: roleCounted, self: true})
		}
	}
	for _, r := range refs {
		t := groupOf(r.tg)
		i := slices.IndexFunc(v.groups, func(g keyGroup) bool { return g.key == t.key })
		if i < 0 {
			v.groups = append(v.groups, keyGroup{key: t.key, hostname: t.hostname})
			i = len(v.groups) - 1
		}
		v.groups[i].refs = append(v.groups[i].refs, r)
	}
	// Hostname constraints are checked last: they only ever exclude locations.
	slices.SortStableFunc(v.groups, func(a, b keyGroup) int {
		if a.hostname != b.hostname {
			return cmp.Compare(boolInt(a.hostname), boolInt(b.hostname))
		}
		return cmp.Compare(a.key, b.key)
	})
	return v
}

func describeStep(sig *podSig, st relaxStep) string {
	switch st.kind {
	case relaxPodAffinity:
		return fmt.Sprintf("preferred pod affinity (weight %d)", sig.affinity[st.index].weight)
	case relaxPodAntiAffinity:
		return fmt.Sprintf("preferred pod anti-affinity (weight %d)", sig.anti[st.index].weight)
	case relaxNodeAffinity:
		return fmt.Sprintf("preferred node affinity (weight %d)", sig.prefWeight[st.index])
	case relaxSpread:
		return fmt.Sprintf("ScheduleAnyway topology spread %d", st.index)
	default:
		return "PreferNoSchedule taints"
	}
}
