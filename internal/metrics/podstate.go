package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// Positions in PodStateLabels: the order of karpenter_pods_state's label
// names (podStateLabelNames).
const (
	PodStateName = iota
	PodStateNamespace
	PodStateOwner
	PodStateNode
	PodStateNodePool
	PodStateZone
	PodStateArch
	PodStateCapacityType
	PodStateInstanceType
	PodStatePhase
	podStateLabelCount
)

// podStateLabelNames are karpenter_pods_state's label names, Karpenter's,
// in the order of the PodState* positions.
var podStateLabelNames = [podStateLabelCount]string{"name", "namespace", "owner", "node", LabelNodePool, LabelZone, "arch", LabelCapacityType, LabelInstanceType, "phase"}

// PodStateLabels are the label values of one pod's karpenter_pods_state
// series, indexed by the PodState* positions.
type PodStateLabels [podStateLabelCount]string

// PodStates is the karpenter_pods_state gauge: value 1 for every pod,
// labelled with where it runs and its phase. It keeps one fixed array of
// label values per pod and builds the series only when scraped, as
// kube-state-metrics does, instead of a GaugeVec child per pod: at 10,000
// pods the GaugeVec's children (label pairs, hashes, gauges) were about an
// eighth of the controller's live heap. Safe for concurrent use.
type PodStates struct {
	desc *prometheus.Desc

	mu   sync.RWMutex
	pods map[types.NamespacedName]PodStateLabels
}

// NewPodStates returns an empty karpenter_pods_state gauge.
func NewPodStates() *PodStates {
	return &PodStates{
		desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "pods", "state"),
			"Pod state: 1 for every pod, labelled with where it runs and its phase.", podStateLabelNames[:], nil),
		pods: map[types.NamespacedName]PodStateLabels{},
	}
}

// Set makes labels the pod's only series.
func (p *PodStates) Set(pod types.NamespacedName, labels PodStateLabels) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pods[pod] = labels
}

// Delete removes the pod's series.
func (p *PodStates) Delete(pod types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pods, pod)
}

// Len is the number of pods with a series.
func (p *PodStates) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.pods)
}

// Describe sends the gauge's one descriptor.
func (p *PodStates) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect sends one series per pod. The label values are copied out under
// the lock first, so a slow scrape never holds up the pod controller.
func (p *PodStates) Collect(ch chan<- prometheus.Metric) {
	p.mu.RLock()
	all := make([]PodStateLabels, 0, len(p.pods))
	for _, labels := range p.pods {
		all = append(all, labels)
	}
	p.mu.RUnlock()
	for i := range all {
		metric, err := prometheus.NewConstMetric(p.desc, prometheus.GaugeValue, 1, all[i][:]...)
		if err != nil {
			metric = prometheus.NewInvalidMetric(p.desc, err)
		}
		ch <- metric
	}
}
