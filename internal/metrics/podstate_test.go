package metrics

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// podStateSeries gathers reg and writes each karpenter_pods_state series as
// "name=value ..." in label order, sorted.
func podStateSeries(t *testing.T, reg *prometheus.Registry) []string {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var got []string
	for _, family := range families {
		if family.GetName() != "karpenter_pods_state" {
			continue
		}
		for _, metric := range family.GetMetric() {
			if metric.GetGauge().GetValue() != 1 {
				t.Errorf("series value %v, want 1", metric.GetGauge().GetValue())
			}
			var parts []string
			for _, pair := range metric.GetLabel() {
				parts = append(parts, pair.GetName()+"="+pair.GetValue())
			}
			got = append(got, strings.Join(parts, " "))
		}
	}
	slices.Sort(got)
	return got
}

func TestPodStatesKeepsOneSeriesPerPod(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	web := types.NamespacedName{Namespace: "shop", Name: "web-0"}
	db := types.NamespacedName{Namespace: "shop", Name: "db-0"}
	pending := PodStateLabels{PodStateName: "web-0", PodStateNamespace: "shop", PodStateOwner: "ReplicaSet/web", PodStatePhase: "Pending"}
	running := pending
	running[PodStateNode], running[PodStateNodePool], running[PodStateZone] = "node-a", "general", "zone-a"
	running[PodStateArch], running[PodStateCapacityType], running[PodStateInstanceType] = "amd64", "spot", "m5.large"
	running[PodStatePhase] = "Running"
	dbLabels := PodStateLabels{PodStateName: "db-0", PodStateNamespace: "shop", PodStatePhase: "Pending"}

	steps := []struct {
		name string
		do   func()
		want []string
	}{
		{"no pods, no series", func() {}, nil},
		{"a pending pod", func() { m.PodsState.Set(web, pending) }, []string{
			"arch= capacity_type= instance_type= name=web-0 namespace=shop node= nodepool= owner=ReplicaSet/web phase=Pending zone=",
		}},
		{"the pod runs: its series is replaced, not added to", func() { m.PodsState.Set(web, running) }, []string{
			"arch=amd64 capacity_type=spot instance_type=m5.large name=web-0 namespace=shop node=node-a nodepool=general owner=ReplicaSet/web phase=Running zone=zone-a",
		}},
		{"a second pod", func() { m.PodsState.Set(db, dbLabels) }, []string{
			"arch= capacity_type= instance_type= name=db-0 namespace=shop node= nodepool= owner= phase=Pending zone=",
			"arch=amd64 capacity_type=spot instance_type=m5.large name=web-0 namespace=shop node=node-a nodepool=general owner=ReplicaSet/web phase=Running zone=zone-a",
		}},
		{"the first is deleted", func() { m.PodsState.Delete(web) }, []string{
			"arch= capacity_type= instance_type= name=db-0 namespace=shop node= nodepool= owner= phase=Pending zone=",
		}},
		{"deleting a pod twice is harmless", func() { m.PodsState.Delete(web); m.PodsState.Delete(db) }, nil},
	}
	for _, step := range steps {
		step.do()
		if got := podStateSeries(t, reg); !slices.Equal(got, step.want) {
			t.Errorf("%s: series\n%q\nwant\n%q", step.name, got, step.want)
		}
		if m.PodsState.Len() != len(step.want) {
			t.Errorf("%s: Len %d, want %d", step.name, m.PodsState.Len(), len(step.want))
		}
	}
}

// TestPodStatesReportsABadLabelValue: a label value that is not UTF-8
// fails the scrape with an error naming the metric instead of panicking
// or sending a broken series.
func TestPodStatesReportsABadLabelValue(t *testing.T) {
	reg := prometheus.NewRegistry()
	states := NewPodStates()
	reg.MustRegister(states)
	states.Set(types.NamespacedName{Namespace: "shop", Name: "bad"}, PodStateLabels{PodStateName: "bad\xff", PodStateNamespace: "shop"})
	_, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "karpenter_pods_state") {
		t.Fatalf("Gather: %v, want an error naming karpenter_pods_state", err)
	}
}
