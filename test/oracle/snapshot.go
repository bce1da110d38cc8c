package oracle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator/replay"
)

// snapshot is the scheduler's view of the cluster during a replay: one
// NodeInfo per node, updated as pods bind. It implements the framework's
// SharedLister, the only cluster state the filter plugins read.
type snapshot struct {
	nodes  []fwk.NodeInfo
	byName map[string]*framework.NodeInfo
	pvcs   map[string]bool // namespace/name of claims bound pods use

	affinity, anti []fwk.NodeInfo // cached; nil after a change
}

var (
	_ fwk.SharedLister      = (*snapshot)(nil)
	_ fwk.NodeInfoLister    = (*snapshot)(nil)
	_ fwk.StorageInfoLister = (*snapshot)(nil)
)

func newSnapshot(pr *replay.Problem) *snapshot {
	s := &snapshot{byName: map[string]*framework.NodeInfo{}, pvcs: map[string]bool{}}
	for _, n := range pr.Nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		s.nodes = append(s.nodes, ni)
		s.byName[n.Name] = ni
	}
	for _, p := range pr.Bound {
		if ni, ok := s.byName[p.Spec.NodeName]; ok {
			s.add(ni, p)
		}
	}
	return s
}

// add binds pod to the node.
func (s *snapshot) add(ni *framework.NodeInfo, pod *corev1.Pod) {
	ni.AddPod(pod)
	s.affinity, s.anti = nil, nil
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			s.pvcs[pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
		}
	}
}

func (s *snapshot) list() []fwk.NodeInfo { return s.nodes }

// NodeInfos returns the snapshot itself.
func (s *snapshot) NodeInfos() fwk.NodeInfoLister { return s }

// StorageInfos returns the snapshot itself.
func (s *snapshot) StorageInfos() fwk.StorageInfoLister { return s }

// PodGroupStates returns a lister that knows no pod groups.
func (s *snapshot) PodGroupStates() fwk.PodGroupStateLister { return noPodGroups{} }

// List returns every node.
func (s *snapshot) List() ([]fwk.NodeInfo, error) { return s.nodes, nil }

// HavePodsWithAffinityList returns the nodes with a pod that has pod affinity or anti-affinity.
func (s *snapshot) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) {
	if s.affinity == nil {
		s.affinity = []fwk.NodeInfo{}
		for _, ni := range s.nodes {
			if len(ni.GetPodsWithAffinity()) > 0 {
				s.affinity = append(s.affinity, ni)
			}
		}
	}
	return s.affinity, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes with a pod that has required anti-affinity.
func (s *snapshot) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	if s.anti == nil {
		s.anti = []fwk.NodeInfo{}
		for _, ni := range s.nodes {
			if len(ni.GetPodsWithRequiredAntiAffinity()) > 0 {
				s.anti = append(s.anti, ni)
			}
		}
	}
	return s.anti, nil
}

// Get returns the named node.
func (s *snapshot) Get(name string) (fwk.NodeInfo, error) {
	if ni, ok := s.byName[name]; ok {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not in the snapshot", name)
}

// IsPVCUsedByPods reports whether a bound pod uses the claim namespace/name.
func (s *snapshot) IsPVCUsedByPods(key string) bool { return s.pvcs[key] }

type noPodGroups struct{}

// Get reports that no pod group exists.
func (noPodGroups) Get(namespace, name string) (fwk.PodGroupState, error) {
	return nil, fmt.Errorf("pod group %s/%s not found", namespace, name)
}
