package simulator

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/bitset"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// solve is the state of one simulation. Everything it changes lives here;
// the model is only read. Per-node and per-group state is copied from the
// model on first write.
type solve struct {
	m    *Model
	req  Request
	comp *compiler

	keys, vals *interner
	localSigs  []*podSig
	localTGs   []*tg
	localSlots map[int32]*slotMap
	extraSlots map[int32]map[int32]int32
	views      int32

	nodeFree  []resources.Vector // nil: the model's alloc - used
	nodePorts [][]hostPort       // nil: the model's
	nodeGone  []bool
	nodeAvoid []bool
	nodePods  [][]*podInfo // pods placed by this solve
	sequence  []*podInfo   // pods in the order they were placed
	zoneLoad  []int32      // pods this solve put in each zone slot (on claims)

	counts         [][]int32 // per group; nil: the model's
	owners         [][]int32
	totals         []int32
	undecided      map[int32][]int32 // spread group -> per slot: pods on claims its filter may or may not count (countOnClaim)
	touched        []bool
	occupied       []int32            // hostname groups: claims with a counted pod
	occupiedOwners []int32            // hostname groups: claims with an anti-affinity owner
	floating       map[int32][]*claim // anti-affinity group -> claims whose domain is open

	pools     []poolState
	claims    []*claim
	bySlack   []*claim // claims by cpu slack, ascending
	claimsCap int      // -1: no cap
	priceCap  float64

	// caches, indexed by view id
	classOK  [][]int8 // per view: per node class, 0 unknown, 1 ok, 2 not
	poolTol  [][]int8 // per view: per pool
	eligible map[[2]int32][]int32

	masks       map[string]bitset.Set
	keyBuf      []byte
	optBuf      bitset.Set
	orders      map[string][]int32
	maskBuf     bitset.Set
	portBuf     bitset.Set
	sumBuf      resources.Vector
	demand      resources.Vector             // requests of the pods not placed yet
	slackSum    resources.Vector             // room left in the open claims' targets
	ownNodeLeft int                          // pods not placed yet that need a node of their own
	sigLeft     map[*podSig]resources.Vector // requests of the pods not placed yet, per signature
	hullBuf     []hullPoint                  // scratch (clippedHull)
}

// poolState is what a solve uses up of a NodePool's limits.
type poolState struct {
	remaining      resources.Vector // per dimension the pool limits; nil: no limits
	remainingNodes int64            // -1: unlimited
	version        int              // bumped when remaining changes
	fresh          *claim           // template claim for the current version
	freshLimited   bool             // the template was narrowed by limits
}

// Solve runs one simulation: it places req.Pods onto the model's nodes and
// new NodeClaims. It does not modify the model and is safe to call
// concurrently.
func (m *Model) Solve(req Request) *Plan {
	s := m.newSolve(req)
	pods := s.preparePods(req.Pods)
	failed := s.run(pods)
	return s.plan(pods, failed)
}

// Simulate is New followed by a solve of the snapshot's pending pods.
func Simulate(snapshot *Snapshot, opts Options) *Plan {
	m := New(snapshot, opts)
	return m.Solve(Request{Pods: snapshot.Pods})
}

func (m *Model) newSolve(req Request) *solve {
	s := &solve{
		m: m, req: req,
		keys: m.keys.child(), vals: m.vals.child(),
		localSlots: map[int32]*slotMap{},
		extraSlots: map[int32]map[int32]int32{},
		views:      m.views,
		nodeFree:   make([]resources.Vector, len(m.nodes)),
		nodePorts:  make([][]hostPort, len(m.nodes)),
		nodeGone:   make([]bool, len(m.nodes)),
		nodeAvoid:  make([]bool, len(m.nodes)),
		nodePods:   make([][]*podInfo, len(m.nodes)),
		counts:     make([][]int32, len(m.tgs)),
		owners:     make([][]int32, len(m.tgs)),
		totals:     make([]int32, len(m.tgs)),
		touched:    make([]bool, len(m.tgs)),
		floating:   map[int32][]*claim{},
		claimsCap:  -1,
		priceCap:   req.MaxNewNodeClaimPrice,
		eligible:   map[[2]int32][]int32{},
		masks:      map[string]bitset.Set{},
		sumBuf:     m.res.New(),
	}
	for i, t := range m.tgs {
		s.totals[i] = t.total
	}
	if req.MaxNewNodeClaims != nil {
		s.claimsCap = max(*req.MaxNewNodeClaims, 0)
	}
	s.comp = &compiler{
		m: m, keys: s.keys, vals: s.vals, sigByKey: map[string]*podSig{}, sigs: &s.localSigs,
		tgs: &s.localTGs, tgByDef: map[string]int32{}, tgBase: int32(len(m.tgs)), sigBase: int32(len(m.sigs)), viewBase: &s.views,
	}
	s.pools = make([]poolState, len(m.pools))
	for i, p := range m.pools {
		ps := &s.pools[i]
		ps.remainingNodes = -1
		if p.np == nil || !p.hasLimits {
			continue
		}
		ps.remaining = m.res.New()
		for d, l := range p.limits {
			if l >= 0 {
				ps.remaining[d] = l - p.usage[d]
			}
		}
		if p.limitNodes >= 0 {
			ps.remainingNodes = p.limitNodes - p.usageNodes
		}
	}
	for _, name := range req.RemoveNodes {
		if i, ok := m.nodeByName[name]; ok && !s.nodeGone[i] {
			s.removeNode(i)
		}
	}
	for _, name := range req.AvoidNodes {
		if i, ok := m.nodeByName[name]; ok {
			s.nodeAvoid[i] = true
		}
	}
	return s
}

// removeNode forgets a node for this solve: its pods stop counting and its
// capacity stops counting against its NodePool's limits.
func (s *solve) removeNode(i int32) {
	s.nodeGone[i] = true
	n := s.m.nodes[i]
	if !n.deleting {
		for _, pi := range n.pods {
			s.uncount(pi, n)
		}
	}
	if n.pool >= 0 {
		ps := &s.pools[n.pool]
		if ps.remaining != nil {
			for d, l := range s.m.pools[n.pool].limits {
				if l >= 0 {
					ps.remaining[d] += n.capacity[d]
				}
			}
		}
		if ps.remainingNodes >= 0 {
			ps.remainingNodes++
		}
		ps.version++
	}
}

// uncount removes a bound pod's contribution to topology counts.
func (s *solve) uncount(pi *podInfo, n *node) {
	for _, id := range pi.sig.selectedBy {
		if id >= int32(len(s.m.tgs)) {
			continue
		}
		t := s.m.tgs[id]
		if t.kind == tgSpread && !t.nodeOK[n.idx] {
			continue
		}
		if slot, ok := s.m.nodeSlot(t, n); ok {
			s.addCount(t, slot, -1, false)
		}
	}
	for _, id := range pi.sig.ownsAnti {
		t := s.m.tgs[id]
		if slot, ok := s.m.nodeSlot(t, n); ok {
			s.addCount(t, slot, -1, true)
		}
	}
}

// preparePods compiles the request's pods (reusing the model's compilation of
// snapshot pods) and frees the places of bound pods being moved. It returns
// them in placement order: deferred pods (Snapshot.Deferred) after all
// others; before that, first pods that need a node of their own (required
// hostname anti-affinity against their own kind), since they decide how many
// nodes there will be and the rest can fill them; then largest cpu first,
// largest memory, and namespace, name and uid, so that the plan does not
// depend on input order.
func (s *solve) preparePods(in []*corev1.Pod) []*podInfo {
	m := s.m
	pods := make([]*podInfo, 0, len(in))
	seen := make(map[*corev1.Pod]bool, len(in))
	for _, pod := range in {
		if pod == nil || seen[pod] {
			continue
		}
		seen[pod] = true
		var pi *podInfo
		if known, ok := m.podByPtr[pod]; ok {
			cp := *known
			pi = &cp
		} else {
			pi = s.comp.compilePod(pod)
			if b, ok := m.boundByUID[pod.UID]; ok && pod.UID != "" {
				pi.node = b.node
			}
		}
		pi.level = 0
		if m.opts.PreferencePolicy == PreferencesIgnore {
			pi.level = len(pi.sig.steps)
		}
		if pi.node >= 0 {
			s.unbind(pi)
		}
		pods = append(pods, pi)
	}
	s.finishLocal()
	slices.SortStableFunc(pods, func(a, b *podInfo) int {
		return cmp.Or(
			cmp.Compare(boolInt(a.deferred), boolInt(b.deferred)),
			cmp.Compare(boolInt(!a.sig.ownNode), boolInt(!b.sig.ownNode)),
			cmp.Compare(b.req[resources.CPU], a.req[resources.CPU]),
			cmp.Compare(b.req[resources.Memory], a.req[resources.Memory]),
			cmp.Compare(a.pod.Namespace, b.pod.Namespace),
			cmp.Compare(a.pod.Name, b.pod.Name),
			cmp.Compare(a.pod.UID, b.pod.UID),
		)
	})
	for i, pi := range pods {
		pi.order = i
	}
	return pods
}

// unbind frees a bound pod's place on its node for this solve.
func (s *solve) unbind(pi *podInfo) {
	n := s.m.nodes[pi.node]
	if s.nodeGone[pi.node] {
		pi.node = -1
		return
	}
	free := s.free(pi.node)
	free.Add(pi.req)
	if !n.deleting {
		s.uncount(pi, n)
	}
	pi.node = -1
}

// finishLocal wires up signatures and groups the solve compiled itself.
func (s *solve) finishLocal() {
	m := s.m
	if len(s.localSigs) == 0 {
		return
	}
	all := append(slices.Clone(m.tgs), s.localTGs...)
	for _, t := range s.localTGs {
		if !t.hostname {
			if _, ok := m.slots[t.key]; !ok {
				if _, ok := s.localSlots[t.key]; !ok {
					s.localSlots[t.key] = m.buildSlots(t.key)
				}
			}
		}
	}
	var cand []int32
	for _, sig := range s.localSigs {
		cand = m.tgIndex.candidates(sig.labels, cand[:0])
		for _, t := range s.localTGs {
			cand = append(cand, t.id)
		}
		m.selectSig(sig, all, cand, 0)
	}
	for _, t := range s.localTGs {
		s.countLocal(t)
		s.counts = append(s.counts, t.counts)
		s.owners = append(s.owners, t.owners)
		s.totals = append(s.totals, t.total)
		s.touched = append(s.touched, true)
	}
	for _, sig := range s.localSigs {
		m.sigViews(sig, s.vals, &s.views, all, 0)
	}
}

// countLocal counts the model's bound pods into a group the solve created.
func (s *solve) countLocal(t *tg) {
	m := s.m
	size := len(m.nodes)
	if !t.hostname {
		size = len(s.slotMap(t.key).vals)
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
	}
	for _, pi := range m.bound {
		n := m.nodes[pi.node]
		if n.deleting || s.nodeGone[n.idx] || (t.kind == tgSpread && !t.nodeOK[n.idx]) {
			continue
		}
		slot, ok := s.nodeSlot(t, n)
		if !ok || !t.selects(pi.pod.Namespace, pi.pod.Labels) {
			continue
		}
		t.counts[slot]++
		t.total++
	}
}

func (s *solve) slotMap(key int32) *slotMap {
	if sm, ok := s.m.slots[key]; ok {
		return sm
	}
	sm, ok := s.localSlots[key]
	if !ok {
		sm = s.m.buildSlots(key)
		s.localSlots[key] = sm
	}
	return sm
}

// slotOf returns the slot of a value of a topology key, numbering values the
// model never saw after the model's own.
func (s *solve) slotOf(key, val int32) int32 {
	sm := s.slotMap(key)
	if slot, ok := sm.ids[val]; ok {
		return slot
	}
	extra := s.extraSlots[key]
	if extra == nil {
		extra = map[int32]int32{}
		s.extraSlots[key] = extra
	}
	if slot, ok := extra[val]; ok {
		return slot
	}
	slot := int32(len(sm.vals) + len(extra))
	extra[val] = slot
	return slot
}

// slotValue returns the value a slot stands for.
func (s *solve) slotValue(key, slot int32) int32 {
	sm := s.slotMap(key)
	if int(slot) < len(sm.vals) {
		return sm.vals[slot]
	}
	for v, sl := range s.extraSlots[key] {
		if sl == slot {
			return v
		}
	}
	return -1
}

func (s *solve) nodeSlot(t *tg, n *node) (int32, bool) {
	if t.hostname {
		return n.idx, true
	}
	v, ok := n.value(t.key)
	if !ok {
		return 0, false
	}
	return s.slotOf(t.key, v), true
}

func (s *solve) tg(id int32) *tg {
	if id < int32(len(s.m.tgs)) {
		return s.m.tgs[id]
	}
	return s.localTGs[id-int32(len(s.m.tgs))]
}

func (s *solve) count(t *tg, slot int32) int32 {
	c := s.counts[t.id]
	if c == nil && !s.touched[t.id] {
		c = t.counts
	}
	if int(slot) < len(c) {
		return c[slot]
	}
	return 0
}

func (s *solve) ownerCount(t *tg, slot int32) int32 {
	c := s.owners[t.id]
	if c == nil && !s.touched[t.id] {
		c = t.owners
	}
	if int(slot) < len(c) {
		return c[slot]
	}
	return 0
}

// addCount changes a group's count (or owner count) in one slot, copying the
// model's counts on first write.
func (s *solve) addCount(t *tg, slot int32, delta int32, owner bool) {
	if !s.touched[t.id] {
		s.touched[t.id] = true
		s.counts[t.id] = slices.Clone(t.counts)
		s.owners[t.id] = slices.Clone(t.owners)
	}
	arr := &s.counts[t.id]
	occ := &s.occupied
	if owner {
		arr = &s.owners[t.id]
		occ = &s.occupiedOwners
	} else {
		s.totals[t.id] += delta
	}
	if int(slot) >= len(*arr) {
		*arr = append(*arr, make([]int32, int(slot)+1-len(*arr))...)
	}
	before := (*arr)[slot]
	(*arr)[slot] += delta
	if t.hostname && slot >= int32(len(s.m.nodes)) && (before > 0) != ((*arr)[slot] > 0) {
		// Track how many claims hold a selected pod, so that a pod that needs
		// an empty claim can tell at once that none is left.
		if int(t.id) >= len(*occ) {
			*occ = append(*occ, make([]int32, int(t.id)+1-len(*occ))...)
		}
		if before > 0 {
			(*occ)[t.id]--
		} else {
			(*occ)[t.id]++
		}
	}
}

// occupiedClaims returns how many claims hold a pod a hostname group counts
// (or, for owners, an owner of its anti-affinity).
func (s *solve) occupiedClaims(t *tg, owner bool) int32 {
	occ := s.occupied
	if owner {
		occ = s.occupiedOwners
	}
	if int(t.id) < len(occ) {
		return occ[t.id]
	}
	return 0
}

// free returns the node's free capacity for this solve, copying on first use.
func (s *solve) free(i int32) resources.Vector {
	if s.nodeFree[i] == nil {
		n := s.m.nodes[i]
		f := slices.Clone(n.alloc)
		f.Sub(n.used)
		s.nodeFree[i] = f
	}
	return s.nodeFree[i]
}

func (s *solve) ports(i int32) []hostPort {
	if s.nodePorts[i] != nil {
		return s.nodePorts[i]
	}
	return s.m.nodes[i].ports
}

// run places pods in order. A pod that does not fit has its preferences
// relaxed one at a time and is retried at once; if it still does not fit it
// waits for the next pass. Passes repeat while they place something (a pod
// with affinity to another pending pod goes through once that pod is placed).
// Generic pods (see generic.go) go last, in bulk.
func (s *solve) run(pods []*podInfo) []*podInfo {
	s.demand = s.m.res.New()
	s.slackSum = s.m.res.New()
	s.sigLeft = map[*podSig]resources.Vector{}
	for _, pi := range pods {
		s.demand.Add(pi.req)
		left := s.sigLeft[pi.sig]
		if left == nil {
			left = s.m.res.New()
			s.sigLeft[pi.sig] = left
		}
		left.Add(pi.req)
		if pi.sig.ownNode {
			s.ownNodeLeft++
		}
	}
	var queue, generic []*podInfo
	for _, pi := range pods {
		if s.isGeneric(pi, pi.sig.views[pi.level]) {
			generic = append(generic, pi)
		} else {
			queue = append(queue, pi)
		}
	}
	var failed []*podInfo
	for len(queue) > 0 {
		failed = nil
		progress := false
		for _, pi := range queue {
			if s.place(pi) {
				progress = true
			} else {
				failed = append(failed, pi)
			}
		}
		if !progress {
			break
		}
		queue = failed
	}
	failed = append(failed, s.packGeneric(generic)...)
	s.emptyZonalClaims()
	return failed
}

func (s *solve) place(pi *podInfo) bool {
	if pi.invalid != "" || pi.sig.invalid != "" {
		return false
	}
	for {
		v := pi.sig.views[pi.level]
		if v.noAlt == "" && s.tryPlace(pi, v) {
			return true
		}
		if pi.level >= len(pi.sig.steps) {
			return false
		}
		pi.level++
	}
}
