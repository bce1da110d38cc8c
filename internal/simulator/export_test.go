package simulator

import (
	"fmt"
	"slices"
)

// CheckSpreadCounts solves req on m and checks that every spread group's
// counts are what the solve's placements imply: for each slot, the pods
// counted before the solve, plus the pods it placed on existing nodes that
// pass the group's filter, plus those on settled claims whose requirements
// pass it; and its undecided counts are the pods on settled claims whose
// requirements leave the filter open (countOnClaim, refilter).
func CheckSpreadCounts(m *Model, req Request) error {
	s := m.newSolve(req)
	pods := s.preparePods(req.Pods)
	slots := func(t *tg) int32 {
		if t.hostname {
			return int32(len(s.m.nodes)) + int32(len(s.claims)) + int32(len(req.Pods))
		}
		n := int32(0)
		if sm := s.m.slots[t.key]; sm != nil {
			n = int32(len(sm.ids))
		}
		return n + int32(len(s.extraSlots[t.key])) + 64
	}
	groups := len(s.m.tgs) + len(s.localTGs)
	before := make([][]int32, groups)
	for id := range groups {
		if t := s.tg(int32(id)); t.kind == tgSpread {
			for sl := range slots(t) {
				before[id] = append(before[id], s.count(t, sl))
			}
		}
	}
	s.run(pods)
	for id := range groups {
		t := s.tg(int32(id))
		if t.kind != tgSpread {
			continue
		}
		n := slots(t)
		want := make([]int32, n)
		copy(want, before[id])
		undecided := make([]int32, n)
		for i, list := range s.nodePods {
			node := s.m.nodes[i]
			for _, pi := range list {
				if sl, ok := s.nodeSlot(t, node); ok && t.nodeOK[node.idx] && slices.Contains(pi.sig.selectedBy, t.id) && sl < n {
					want[sl]++
				}
			}
		}
		for _, c := range s.claims {
			sl, settled := s.claimSlot(c, t)
			if !settled || sl >= n {
				continue
			}
			state := s.claimFilter(t, c.pool, c.reqs)
			for _, pi := range c.pods {
				if !slices.Contains(pi.sig.selectedBy, t.id) {
					continue
				}
				switch state {
				case filterPass:
					want[sl]++
				case filterMaybe:
					undecided[sl]++
				}
			}
		}
		for sl := range n {
			if got := s.count(t, sl); got != want[sl] {
				return fmt.Errorf("group %s slot %d: count %d, want %d", t.def, sl, got, want[sl])
			}
			if got := s.undecidedCount(t, sl); got != undecided[sl] {
				return fmt.Errorf("group %s slot %d: undecided %d, want %d", t.def, sl, got, undecided[sl])
			}
		}
	}
	return nil
}
