package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/podutil"
)

// guardMessage says why a node may not be disrupted voluntarily, or ""
// when every guard passes. The guards apply to every method; the PDB and
// pod guards only look at pods that would have to move.
func (p *pass) guardMessage(n *machine.Machine, pods []*corev1.Pod) string {
	switch {
	case n.MarkedForDeletion:
		return "Node is being deleted"
	case !n.Initialized():
		return "Node is not initialized"
	case n.NominatedUntil.After(p.now):
		return fmt.Sprintf("Node is nominated for pending pods until %s", n.NominatedUntil.UTC().Format(time.RFC3339))
	case n.Node.Annotations[v1.DoNotDisruptAnnotationKey] == "true":
		return fmt.Sprintf("Node has %s annotation", v1.DoNotDisruptAnnotationKey)
	case n.NodeClaim.Annotations[v1.DoNotDisruptAnnotationKey] == "true":
		return fmt.Sprintf("NodeClaim has %s annotation", v1.DoNotDisruptAnnotationKey)
	}
	for _, pod := range pods {
		if protection := podutil.DoNotDisrupt(pod, p.now); protection.Invalid {
			p.invalid = append(p.invalid, InvalidAnnotation{Pod: pod})
		} else if protection.Active {
			return fmt.Sprintf("Pod %s has %s annotation", klog.KObj(pod), v1.DoNotDisruptAnnotationKey)
		}
	}
	for _, pod := range pods {
		if msg := p.pdbs.blocks(pod); msg != "" {
			return msg
		}
	}
	return ""
}

// reschedulable returns the pods of a node that would need a new home if it
// went away. Pods that tolerate the disrupted taint stay until the node is
// gone (drain skips them), so they do not move.
func reschedulable(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, pod := range pods {
		if podutil.IsReschedulable(pod) && !podutil.ToleratesDisruptedTaint(pod) {
			out = append(out, pod)
		}
	}
	return out
}

// pdbIndex answers "would a PDB refuse to evict this pod?" from the PDBs'
// status, as the Eviction API does.
type pdbIndex struct {
	byNamespace map[string][]pdbEntry
}

type pdbEntry struct {
	pdb      *policyv1.PodDisruptionBudget
	selector labels.Selector
}

func newPDBIndex(pdbs []*policyv1.PodDisruptionBudget) *pdbIndex {
	idx := &pdbIndex{byNamespace: map[string][]pdbEntry{}}
	for _, pdb := range pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			// The Eviction API ignores PDBs whose selector it cannot use.
			continue
		}
		idx.byNamespace[pdb.Namespace] = append(idx.byNamespace[pdb.Namespace], pdbEntry{pdb: pdb, selector: sel})
	}
	return idx
}

// blocks returns why a PDB would refuse the pod's eviction: a PDB that
// allows no disruption now, or several PDBs covering the pod (the
// Eviction API refuses those). "" when eviction would be allowed.
func (idx *pdbIndex) blocks(pod *corev1.Pod) string {
	var matching []*policyv1.PodDisruptionBudget
	for _, e := range idx.byNamespace[pod.Namespace] {
		if e.selector.Matches(labels.Set(pod.Labels)) {
			matching = append(matching, e.pdb)
		}
	}
	switch {
	case len(matching) > 1:
		return fmt.Sprintf("Pod %s is covered by %d PDBs (%s, %s), which blocks its eviction", klog.KObj(pod), len(matching),
			klog.KObj(matching[0]), klog.KObj(matching[1]))
	case len(matching) == 1 && matching[0].Status.DisruptionsAllowed <= 0:
		return fmt.Sprintf("PDB %s prevents pod evictions (pod %s)", klog.KObj(matching[0]), klog.KObj(pod))
	}
	return ""
}
