package simulator

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
)

type tgKind uint8

const (
	tgSpread tgKind = iota
	tgAffinity
	tgAnti
)

func (k tgKind) String() string {
	switch k {
	case tgSpread:
		return "topology spread"
	case tgAffinity:
		return "pod affinity"
	default:
		return "pod anti-affinity"
	}
}

// tg is a topology group: the pods one selector picks out, counted per domain
// of one topology key. Pods with the same constraint (the replicas of a
// deployment) share a group, so counting happens once per constraint.
type tg struct {
	id         int32
	kind       tgKind
	keyName    string
	key        int32
	hostname   bool
	required   bool // spread: DoNotSchedule; anti-affinity: owners block selected pods
	maxSkew    int32
	minDomains int32

	allNamespaces bool
	namespaces    []string // sorted
	selector      labels.Selector
	def           string

	// Spread node filter (nodeAffinityPolicy and nodeTaintsPolicy Honor).
	honorAffinity     bool
	filterAlts        []creqs
	honorTaints       bool
	filterTolerations []corev1.Toleration

	// Counts of bound pods, per slot (per node for hostname groups).
	counts   []int32
	owners   []int32 // required anti-affinity: owners per slot
	total    int32
	nodeOK   []bool  // spread: whether each node passes the filter
	eligible []int32 // spread on non-hostname keys: slots counted for the minimum
}

func (t *tg) selects(namespace string, lbls map[string]string) bool {
	if !t.allNamespaces {
		if _, ok := slices.BinarySearch(t.namespaces, namespace); !ok {
			return false
		}
	}
	return t.selector.Matches(labels.Set(lbls))
}

// describe renders the group for messages.
func (t *tg) describe() string {
	s := fmt.Sprintf("%s on %s for pods matching %q", t.kind, t.keyName, t.selector.String())
	if t.kind == tgSpread {
		s = fmt.Sprintf("topology spread on %s (maxSkew %d", t.keyName, t.maxSkew)
		if t.minDomains > 0 {
			s += fmt.Sprintf(", minDomains %d", t.minDomains)
		}
		s += fmt.Sprintf(") for pods matching %q", t.selector.String())
	}
	return s
}

// tgIndex finds the groups that may select a pod by one label every member of
// the group carries, so that matching pods against thousands of groups does
// not try them all.
type tgIndex struct {
	anchored   map[string]map[string][]int32
	unanchored []int32
}

func (x *tgIndex) add(t *tg) {
	if x.anchored == nil {
		x.anchored = map[string]map[string][]int32{}
	}
	reqs, _ := t.selector.Requirements()
	for _, r := range reqs {
		op := r.Operator()
		vals := r.Values()
		if (op == selection.Equals || op == selection.DoubleEquals || op == selection.In) && vals.Len() == 1 {
			byVal := x.anchored[r.Key()]
			if byVal == nil {
				byVal = map[string][]int32{}
				x.anchored[r.Key()] = byVal
			}
			v := vals.UnsortedList()[0]
			byVal[v] = append(byVal[v], t.id)
			return
		}
	}
	x.unanchored = append(x.unanchored, t.id)
}

func (x *tgIndex) candidates(lbls map[string]string, dst []int32) []int32 {
	dst = append(dst, x.unanchored...)
	for k, v := range lbls {
		dst = append(dst, x.anchored[k][v]...)
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}

// tgFor returns the id of the group with the given definition, creating it.
func (c *compiler) tgFor(t *tg) int32 {
	if id, ok := c.m.tgByDef[t.def]; ok {
		return id
	}
	if id, ok := c.tgByDef[t.def]; ok {
		return id
	}
	t.id = c.tgBase + int32(len(*c.tgs))
	*c.tgs = append(*c.tgs, t)
	c.tgByDef[t.def] = t.id
	return t.id
}

// topologyTerms compiles a pod's spread constraints and pod (anti-)affinity
// terms into topology groups.
func (c *compiler) topologyTerms(pod *corev1.Pod, sig *podSig) error {
	var errs []error
	for i := range pod.Spec.TopologySpreadConstraints {
		tsc := &pod.Spec.TopologySpreadConstraints[i]
		t, err := c.spreadGroup(pod, sig, tsc)
		if err != nil {
			errs = append(errs, fmt.Errorf("topology spread constraint %d: %w", i, err))
			continue
		}
		sig.spreads = append(sig.spreads, podTerm{tg: c.tgFor(t), required: tsc.WhenUnsatisfiable != corev1.ScheduleAnyway})
	}
	aff := pod.Spec.Affinity
	if aff == nil {
		return errors.Join(errs...)
	}
	addTerms := func(kind tgKind, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) []podTerm {
		var out []podTerm
		var groups []*tg
		for i := range required {
			t, err := c.affinityGroup(pod, kind, &required[i], true)
			if err != nil {
				errs = append(errs, fmt.Errorf("required %s term %d: %w", kind, i, err))
				continue
			}
			groups = append(groups, t)
		}
		if kind == tgAffinity && len(groups) > 1 {
			// The kube-scheduler counts a pod for a pod's required affinity
			// only if it matches every term: each term's group selects the
			// pods that match them all.
			matchAll(groups)
		}
		for _, t := range groups {
			out = append(out, podTerm{tg: c.tgFor(t), required: true})
		}
		weighted := slices.Clone(preferred)
		slices.SortStableFunc(weighted, func(a, b corev1.WeightedPodAffinityTerm) int { return cmp.Compare(b.Weight, a.Weight) })
		for i := range weighted {
			t, err := c.affinityGroup(pod, kind, &weighted[i].PodAffinityTerm, false)
			if err != nil {
				errs = append(errs, fmt.Errorf("preferred %s term %d: %w", kind, i, err))
				continue
			}
			out = append(out, podTerm{tg: c.tgFor(t), weight: weighted[i].Weight})
		}
		return out
	}
	if aff.PodAffinity != nil {
		sig.affinity = addTerms(tgAffinity, aff.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, aff.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if aff.PodAntiAffinity != nil {
		sig.anti = addTerms(tgAnti, aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return errors.Join(errs...)
}

func (c *compiler) spreadGroup(pod *corev1.Pod, sig *podSig, tsc *corev1.TopologySpreadConstraint) (*tg, error) {
	if tsc.TopologyKey == "" {
		return nil, errors.New("empty topology key")
	}
	if tsc.MaxSkew < 1 {
		return nil, fmt.Errorf("maxSkew %d is not positive", tsc.MaxSkew)
	}
	sel, err := selectorWithKeys(tsc.LabelSelector, pod.Labels, tsc.MatchLabelKeys, nil)
	if err != nil {
		return nil, err
	}
	t := &tg{
		kind: tgSpread, keyName: tsc.TopologyKey, key: c.keys.id(tsc.TopologyKey),
		required: tsc.WhenUnsatisfiable != corev1.ScheduleAnyway, maxSkew: tsc.MaxSkew,
		minDomains: ptrOr(tsc.MinDomains, 0), namespaces: []string{pod.Namespace}, selector: sel,
	}
	t.hostname = t.key == c.m.hostnameKey
	t.honorAffinity = tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	t.honorTaints = tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	var def strings.Builder
	fmt.Fprintf(&def, "S|%s|%v|%d|%d|%s|%s", tsc.TopologyKey, t.required, t.maxSkew, t.minDomains, pod.Namespace, sel.String())
	if t.honorAffinity {
		t.filterAlts = sig.strict
		for _, alt := range sig.strict {
			def.WriteString("|A" + describe(c.keys, c.vals, alt))
		}
	}
	if t.honorTaints {
		// Marked even without tolerations: such a group excludes every
		// tainted node, unlike the same constraint under Ignore.
		def.WriteString("|honorTaints")
		t.filterTolerations = pod.Spec.Tolerations
		for i := range pod.Spec.Tolerations {
			def.WriteString("|T" + pod.Spec.Tolerations[i].String())
		}
	}
	t.def = def.String()
	return t, nil
}

func (c *compiler) affinityGroup(pod *corev1.Pod, kind tgKind, term *corev1.PodAffinityTerm, required bool) (*tg, error) {
	if term.TopologyKey == "" {
		return nil, errors.New("empty topology key")
	}
	sel, err := selectorWithKeys(term.LabelSelector, pod.Labels, term.MatchLabelKeys, term.MismatchLabelKeys)
	if err != nil {
		return nil, err
	}
	all, namespaces, err := c.m.termNamespaces(pod.Namespace, term)
	if err != nil {
		return nil, err
	}
	t := &tg{
		kind: kind, keyName: term.TopologyKey, key: c.keys.id(term.TopologyKey), selector: sel,
		allNamespaces: all, namespaces: namespaces, required: required && kind == tgAnti,
	}
	t.hostname = t.key == c.m.hostnameKey
	t.def = fmt.Sprintf("%d|%s|%v|%v|%s|%s", kind, term.TopologyKey, t.required, all, strings.Join(namespaces, ","), sel.String())
	return t, nil
}

// matchAll narrows each group to the pods every group selects: the AND of
// their selectors, in the namespaces they all count.
func matchAll(groups []*tg) {
	sel := labels.Everything()
	all := true
	var namespaces []string
	for _, t := range groups {
		reqs, selectable := t.selector.Requirements()
		if !selectable {
			sel = labels.Nothing()
		} else if !sel.Empty() || len(reqs) > 0 {
			sel = sel.Add(reqs...)
		}
		switch {
		case t.allNamespaces:
		case all:
			all, namespaces = false, slices.Clone(t.namespaces)
		default:
			namespaces = slices.DeleteFunc(namespaces, func(ns string) bool {
				_, ok := slices.BinarySearch(t.namespaces, ns)
				return !ok
			})
		}
	}
	for _, t := range groups {
		t.selector, t.allNamespaces, t.namespaces = sel, all, namespaces
		t.def = fmt.Sprintf("%d|%s|%v|%v|%s|%s", t.kind, t.keyName, t.required, all, strings.Join(namespaces, ","), sel.String())
	}
}

// selectorWithKeys converts a label selector and narrows it by the pod's own
// values of matchLabelKeys (must equal) and mismatchLabelKeys (must differ).
// A nil selector selects nothing, as in the kube-scheduler.
func selectorWithKeys(ls *metav1.LabelSelector, podLabels map[string]string, match, mismatch []string) (labels.Selector, error) {
	if ls == nil {
		return labels.Nothing(), nil
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return nil, fmt.Errorf("invalid label selector: %w", err)
	}
	add := func(keys []string, op selection.Operator) error {
		for _, k := range keys {
			v, ok := podLabels[k]
			if !ok {
				continue
			}
			r, err := labels.NewRequirement(k, op, []string{v})
			if err != nil {
				return fmt.Errorf("label key %q: %w", k, err)
			}
			sel = sel.Add(*r)
		}
		return nil
	}
	if err := add(match, selection.In); err != nil {
		return nil, err
	}
	if err := add(mismatch, selection.NotIn); err != nil {
		return nil, err
	}
	return sel, nil
}

// termNamespaces resolves the namespaces a pod (anti-)affinity term counts
// pods in: its namespaces list plus those its namespace selector picks (all,
// for an empty selector), or the pod's own namespace when it has neither.
func (m *Model) termNamespaces(own string, term *corev1.PodAffinityTerm) (bool, []string, error) {
	if term.NamespaceSelector == nil && len(term.Namespaces) == 0 {
		return false, []string{own}, nil
	}
	out := slices.Clone(term.Namespaces)
	if term.NamespaceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return false, nil, fmt.Errorf("invalid namespace selector: %w", err)
		}
		if sel.Empty() {
			return true, nil, nil
		}
		for name, lbls := range m.namespaces {
			if sel.Matches(labels.Set(lbls)) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return false, slices.Compact(out), nil
}

// slotMap numbers the values of one topology key.
type slotMap struct {
	ids  map[int32]int32
	vals []int32
}

// finishTopology indexes groups by selector, works out which groups select
// which signatures, numbers domains and counts the bound pods.
func (m *Model) finishTopology() {
	for _, t := range m.tgs {
		m.tgIndex.add(t)
	}
	var cand []int32
	for _, sig := range m.sigs {
		cand = m.tgIndex.candidates(sig.labels, cand[:0])
		m.selectSig(sig, m.tgs, cand, 0)
	}
	for _, t := range m.tgs {
		if t.hostname {
			continue
		}
		if _, ok := m.slots[t.key]; ok {
			continue
		}
		m.slots[t.key] = m.buildSlots(t.key)
	}
	for _, t := range m.tgs {
		m.countGroup(t)
	}
}

// selectSig records, for the candidate groups that select sig, the relations
// placement needs.
func (m *Model) selectSig(sig *podSig, groups []*tg, cand []int32, base int32) {
	for _, id := range cand {
		t := groups[id-base]
		if !t.selects(sig.namespace, sig.labels) {
			continue
		}
		sig.selectedBy = append(sig.selectedBy, t.id)
		if t.kind == tgAnti && t.required {
			sig.inverse = append(sig.inverse, t.id)
		}
	}
	for _, term := range sig.anti {
		if term.required && !slices.Contains(sig.ownsAnti, term.tg) {
			sig.ownsAnti = append(sig.ownsAnti, term.tg)
			if t := groups[term.tg-base]; t.hostname && slices.Contains(sig.selectedBy, term.tg) {
				sig.ownNode = true
			}
		}
	}
}

func (m *Model) buildSlots(key int32) *slotMap {
	seen := map[int32]bool{}
	add := func(v int32) { seen[v] = true }
	for _, n := range m.nodes {
		if v, ok := n.value(key); ok {
			add(v)
		}
	}
	for _, p := range m.pools {
		for _, v := range m.poolValues(p, key, p.base, p.viable) {
			add(v)
		}
	}
	sm := &slotMap{ids: map[int32]int32{}}
	for v := range seen {
		sm.vals = append(sm.vals, v)
	}
	slices.SortFunc(sm.vals, func(a, b int32) int { return cmp.Compare(m.vals.str(a), m.vals.str(b)) })
	for i, v := range sm.vals {
		sm.ids[v] = int32(i)
	}
	return sm
}

// poolValues returns the values of key a node of pool p could get, given
// requirements reqs and the instance types in mask.
func (m *Model) poolValues(p *pool, key int32, reqs creqs, mask bitset.Set) []int32 {
	var out []int32
	r, constrained := reqs.get(key)
	keep := func(v int32) {
		if (!constrained || r.has(m.vals, v)) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	switch {
	case p.invalid != "":
	case key == m.zoneKey || key == m.ctKey:
		for i := range p.pairZone {
			if p.pairBits[i].Intersects(mask) {
				if key == m.zoneKey {
					keep(p.pairZone[i])
				} else {
					keep(p.pairCT[i])
				}
			}
		}
	case p.typeKeys[key] != nil:
		kb := p.typeKeys[key]
		for i, v := range kb.vals {
			if kb.bits[i].Intersects(mask) {
				keep(v)
			}
		}
	case constrained && !r.complement:
		out = append(out, r.vals...)
	}
	return out
}

// countGroup counts bound pods into a group and works out which nodes and
// domains count for a spread constraint.
func (m *Model) countGroup(t *tg) {
	size := len(m.nodes)
	if !t.hostname {
		size = len(m.slots[t.key].vals)
	}
	t.counts = make([]int32, size)
	if t.kind == tgAnti && t.required {
		t.owners = make([]int32, size)
	}
	if t.kind == tgSpread {
		t.nodeOK = make([]bool, len(m.nodes))
		for i, n := range m.nodes {
			t.nodeOK[i] = m.nodePassesFilter(t, n)
		}
		if !t.hostname {
			t.eligible = m.spreadDomains(t)
		}
	}
	for _, pi := range m.bound {
		n := m.nodes[pi.node]
		if n.deleting {
			continue
		}
		slot, ok := m.nodeSlot(t, n)
		if !ok {
			continue
		}
		if slices.Contains(pi.sig.selectedBy, t.id) && (t.kind != tgSpread || t.nodeOK[n.idx]) {
			t.counts[slot]++
			t.total++
		}
		if t.owners != nil && slices.Contains(pi.sig.ownsAnti, t.id) {
			t.owners[slot]++
		}
	}
}

// nodeSlot returns the slot of a node's domain for the group's key.
func (m *Model) nodeSlot(t *tg, n *node) (int32, bool) {
	if t.hostname {
		return n.idx, true
	}
	v, ok := n.value(t.key)
	if !ok {
		return 0, false
	}
	s, ok := m.slots[t.key].ids[v]
	return s, ok
}

func (m *Model) nodePassesFilter(t *tg, n *node) bool {
	if t.honorAffinity && len(t.filterAlts) > 0 {
		ok := false
		for _, alt := range t.filterAlts {
			if m.nodeMatches(n, alt) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if t.honorTaints {
		if _, ok := tolerates(t.filterTolerations, n.taints, false); !ok {
			return false
		}
	}
	return true
}

// spreadDomains lists the slots of a non-hostname spread group that count for
// its minimum: domains of nodes that pass its filter, and domains new nodes
// of the NodePools it may use would get.
func (m *Model) spreadDomains(t *tg) []int32 {
	sm := m.slots[t.key]
	var out []int32
	add := func(v int32) {
		if s, ok := sm.ids[v]; ok && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, n := range m.nodes {
		if !n.deleting && t.nodeOK[n.idx] {
			if v, ok := n.value(t.key); ok {
				add(v)
			}
		}
	}
	alts := t.filterAlts
	if !t.honorAffinity || len(alts) == 0 {
		alts = []creqs{nil}
	}
	for _, p := range m.pools {
		if p.invalid != "" {
			continue
		}
		if t.honorTaints {
			if _, ok := tolerates(t.filterTolerations, p.taints, false); !ok {
				continue
			}
		}
		for _, alt := range alts {
			reqs := and(m.vals, p.base, alt)
			if !reqs.satisfiable() {
				continue
			}
			mask := m.typeMask(p, reqs)
			mask.And(p.viable)
			for _, v := range m.poolValues(p, t.key, reqs, mask) {
				add(v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// nodeMatches reports whether a node's labels satisfy reqs.
func (m *Model) nodeMatches(n *node, reqs creqs) bool {
	_, ok := m.nodeMismatch(m.vals, n, reqs)
	return ok
}

// nodeMismatch returns the first requirement the node's labels violate.
func (m *Model) nodeMismatch(vals *interner, n *node, reqs creqs) (*creq, bool) {
	for i := range reqs {
		r := &reqs[i]
		if v, has := n.value(r.key); has {
			if !r.has(vals, v) {
				return r, false
			}
		} else if !r.absent {
			return r, false
		}
	}
	return nil, true
}
