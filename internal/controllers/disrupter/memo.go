package disrupter

import (
	"encoding/binary"
	"hash/fnv"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
)

// fingerprintOf hashes what consolidation depends on: every machine (Node
// and NodeClaim versions, whether it is marked or nominated, the pods on
// it, not its heartbeats), NodePools, PDBs, pending pods (and the nodes
// their hand-offs gave up on) and the commands in progress. The
// same fingerprint means the same consolidation decision, except for what
// time alone changes; memoRefresh covers that.
func fingerprintOf(in disruption.Input) uint64 {
	h := fnv.New64a()
	write := func(s string) {
		_, _ = h.Write([]byte(s))
		_, _ = h.Write([]byte{0})
	}
	flag := func(b bool) {
		if b {
			write("1")
		} else {
			write("0")
		}
	}
	for _, n := range in.Nodes {
		write(n.Name())
		if n.Node != nil {
			// Not the resource version: node heartbeats change it.
			// Not the consolidation-candidate taint: this loop writes it
			// from its own decisions. The taint only changes the order in
			// which the simulations try nodes (simulator.Node.Disfavored),
			// which may change a decision at the margin; memoRefresh
			// bounds how long such a change waits.
			for _, t := range n.Node.Spec.Taints {
				if !machine.IsConsolidationCandidateTaint(t) {
					write(t.ToString())
				}
			}
			write(n.Node.Annotations[v1.DoNotDisruptAnnotationKey])
			write(n.Node.Labels[v1.NodeInitializedLabelKey])
			flag(n.Node.Spec.Unschedulable)
			for _, cond := range n.Node.Status.Conditions {
				if cond.Type == corev1.NodeReady {
					write(string(cond.Status))
				}
			}
			write(n.Node.Status.Allocatable.Cpu().String() + "/" + n.Node.Status.Allocatable.Memory().String())
		}
		if n.NodeClaim != nil {
			write(n.NodeClaim.ResourceVersion)
		}
		flag(n.MarkedForDeletion)
		flag(n.NominatedUntil.After(in.Now))
		for _, p := range n.Pods {
			write(string(p.UID))
			write(p.Annotations[v1.DoNotDisruptAnnotationKey])
		}
	}
	for _, np := range in.NodePools {
		write(np.NodePool.Name)
		write(np.NodePool.ResourceVersion)
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(len(np.InstanceTypes)))
		_, _ = h.Write(b[:])
	}
	for _, pdb := range in.PDBs {
		write(pdb.Namespace + "/" + pdb.Name + "@" + pdb.ResourceVersion)
	}
	for _, p := range in.PendingPods {
		write(string(p.UID))
		for _, node := range in.Refused[p.UID] {
			write("refused " + node)
		}
	}
	for _, set := range []map[string]bool{in.Disrupting, in.Replacements} {
		names := make([]string, 0, len(set))
		for name := range set {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			write(name)
		}
		write("|")
	}
	return h.Sum64()
}
