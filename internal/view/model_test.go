package view

import (
	"reflect"
	"strings"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func rowsByName(t Table) map[string]Row {
	out := map[string]Row{}
	for _, g := range t.Groups {
		for _, r := range g.Rows {
			out[r.Name] = r
		}
	}
	return out
}

func TestBuildRows(t *testing.T) {
	table := Build(fixture(), Options{Now: now, Prices: testPrices()})
	rows := rowsByName(table)
	tests := []struct {
		name string
		want Row
	}{
		{"n-busy", Row{NodePool: "default", Name: "n-busy", NodeClaim: "c-busy", Status: "Ready", InstanceType: "m5.large", Zone: "us-east-1a",
			CapacityType: "on-demand", Price: 0.096, Priced: true, CPURequested: 2000, CPUAllocatable: 2000,
			MemoryRequested: 7 << 30, MemoryAllocatable: 8 << 30, Pods: 2, Created: now.Add(-2 * time.Hour)}},
		{"n-drift", Row{NodePool: "default", Name: "n-drift", NodeClaim: "c-drift", Status: "Ready", InstanceType: "m5.large", Zone: "us-east-1a",
			CapacityType: "spot", Price: 0.04, Priced: true, CPURequested: 1000, CPUAllocatable: 2000,
			MemoryRequested: 2 << 30, MemoryAllocatable: 8 << 30, Pods: 1, Created: now.Add(-30 * time.Minute),
			Disruption: []string{"drifted", "blocked: do-not-disrupt pod shop/db"}}},
		{"n-batch", Row{NodePool: "batch", Name: "n-batch", NodeClaim: "c-batch", Status: "Ready", InstanceType: "m5.xlarge", Zone: "us-east-1b",
			CapacityType: "on-demand", Price: 0.192, Priced: true, CPURequested: 1000, CPUAllocatable: 4000,
			MemoryRequested: 4 << 30, MemoryAllocatable: 16 << 30, Pods: 1, Created: now.Add(-72 * time.Hour),
			Disruption: []string{"consolidatable", "disrupting (Underutilized)"}}},
		{"n-other", Row{NodePool: Unmanaged, Name: "n-other", Status: "Ready", InstanceType: "t9.odd", Zone: "us-east-1c",
			CPUAllocatable: 1000, MemoryAllocatable: 2 << 30, Created: now.Add(-90 * time.Second)}},
		{"c-new", Row{NodePool: "default", Name: "c-new", NodeClaim: "c-new", InFlight: true, Status: "Registering", InstanceType: "m5.large",
			Zone: "us-east-1a", CapacityType: "spot", Price: 0.04, Priced: true, CPUAllocatable: 2000, MemoryAllocatable: 8 << 30,
			Created: now.Add(-20 * time.Second)}},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d: %v", len(rows), len(tests), rows)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rows[tt.name]; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("row\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestBuildTotalsAndGroups(t *testing.T) {
	table := Build(fixture(), Options{Now: now, Prices: testPrices()})
	want := Totals{Nodes: 4, InFlight: 1, PricePerHour: 0.096 + 0.04 + 0.192 + 0.04, Unpriced: 1, Pods: 4,
		CPURequested: 4000, CPUAllocatable: 9000, MemoryRequested: 13 << 30, MemoryAllocatable: 34 << 30}
	got := table.Totals
	if d := got.PricePerHour - want.PricePerHour; d > 1e-9 || d < -1e-9 {
		t.Errorf("$/h = %v, want %v", got.PricePerHour, want.PricePerHour)
	}
	got.PricePerHour = want.PricePerHour
	if got != want {
		t.Errorf("totals\n got %+v\nwant %+v", got, want)
	}
	if m := table.Totals.PricePerMonth(); m < 268.6 || m > 268.7 {
		t.Errorf("$/month = %v, want 0.368 × 730", m)
	}
	var names []string
	for _, g := range table.Groups {
		names = append(names, g.NodePool)
	}
	if want := []string{"batch", "default", "spare", Unmanaged}; !reflect.DeepEqual(names, want) {
		t.Errorf("groups %v, want %v", names, want)
	}
	if g := table.Groups[1]; g.Totals.Nodes != 2 || g.Totals.InFlight != 1 || g.Totals.Pods != 3 {
		t.Errorf("default's subtotals %+v", g.Totals)
	}
}

func TestBuildSortAndFilter(t *testing.T) {
	tests := []struct {
		sort SortKey
		want []string
	}{
		{SortByName, []string{"c-new", "n-busy", "n-drift"}},
		{SortByPrice, []string{"n-busy", "c-new", "n-drift"}},
		{SortByCPU, []string{"n-busy", "n-drift", "c-new"}},
		{SortByMemory, []string{"n-busy", "n-drift", "c-new"}},
		{SortByAge, []string{"n-busy", "n-drift", "c-new"}},
	}
	for _, tt := range tests {
		t.Run(tt.sort.String(), func(t *testing.T) {
			table := Build(fixture(), Options{Now: now, Prices: testPrices(), Sort: tt.sort, NodePool: "default"})
			if len(table.Groups) != 1 || table.Groups[0].NodePool != "default" {
				t.Fatalf("filter kept %d groups", len(table.Groups))
			}
			var got []string
			for _, r := range table.Groups[0].Rows {
				got = append(got, r.Name)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("order %v, want %v", got, tt.want)
			}
			if table.Totals.Nodes != 4 {
				t.Errorf("the filter changed the cluster totals: %+v", table.Totals)
			}
		})
	}
	if SortByAge.Next() != SortByName {
		t.Error("sort keys do not cycle")
	}
}

func TestDisruptionStates(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(o *Objects)
		node   string
		want   string
	}{
		{"node annotation blocks", func(o *Objects) {
			o.Nodes[0].Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
		}, "n-busy", "blocked: node do-not-disrupt"},
		{"expired pod protection does not block", func(o *Objects) {
			p := o.Pods[2]
			p.Annotations["karpenter.sh/do-not-disrupt"] = "5m"
			p.Status.StartTime = nil
			start := now.Add(-time.Hour)
			p.Status.StartTime = ptrTime(start)
		}, "n-drift", "drifted"},
		{"several pods", func(o *Objects) {
			o.Pods[0].Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
			o.Pods[1].Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
		}, "n-busy", "blocked: do-not-disrupt pod shop/web-1 (+1 more)"},
		{"deleting claim", func(o *Objects) {
			o.NodeClaims[0].DeletionTimestamp = ptrTime(now)
		}, "n-busy", "deleting"},
		{"disrupted taint", func(o *Objects) {
			o.Nodes[0].Spec.Taints = o.Nodes[2].Spec.Taints
		}, "n-busy", "disrupting"},
		{"a PDB allowing no eviction blocks", func(o *Objects) {
			o.Pods[1].Labels = map[string]string{"app": "web"}
			o.PDBs = []*policyv1.PodDisruptionBudget{pdb("shop", "web", "web", 0)}
		}, "n-busy", "blocked: PDB shop/web allows no eviction (pod " + "web-2)"},
		{"a PDB allowing an eviction does not block", func(o *Objects) {
			o.Pods[1].Labels = map[string]string{"app": "web"}
			o.PDBs = []*policyv1.PodDisruptionBudget{pdb("shop", "web", "web", 1)}
		}, "n-busy", ""},
		{"a PDB of another namespace does not block", func(o *Objects) {
			o.Pods[1].Labels = map[string]string{"app": "web"}
			o.PDBs = []*policyv1.PodDisruptionBudget{pdb("other", "web", "web", 0)}
		}, "n-busy", ""},
		{"budgets allowing nothing block", func(o *Objects) {
			o.NodePools[0].Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("0")}}
		}, "n-busy", "blocked: NodePool default's budgets allow no disruption now"},
		{"budgets allowing one reason do not block", func(o *Objects) {
			o.NodePools[0].Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("0"), Reasons: []v1.DisruptionReason{v1.DisruptionReasonUnderutilized}}}
		}, "n-busy", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := fixture()
			tt.mutate(&objs)
			got := strings.Join(rowsByName(Build(objs, Options{Now: now, Prices: testPrices()}))[tt.node].Disruption, ", ")
			if got != tt.want {
				t.Errorf("disruption %q, want %q", got, tt.want)
			}
		})
	}
}

// pdb is a PodDisruptionBudget selecting app=app with allowed disruptions.
func pdb(ns, name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

func TestBarAndAge(t *testing.T) {
	for _, tt := range []struct {
		used, total int64
		want        string
	}{
		{0, 0, "-"},
		{0, 100, "░░░░░░░░░░   0%"},
		{50, 100, "█████░░░░░  50%"},
		{100, 100, "██████████ 100%"},
		{150, 100, "██████████ 150%"},
	} {
		if got := Bar(tt.used, tt.total); got != tt.want {
			t.Errorf("Bar(%d, %d) = %q, want %q", tt.used, tt.total, got, tt.want)
		}
	}
	for d, want := range map[time.Duration]string{-time.Second: "0s", 45 * time.Second: "45s", 12 * time.Minute: "12m", 5 * time.Hour: "5h", 72 * time.Hour: "3d"} {
		if got := Age(d); got != want {
			t.Errorf("Age(%s) = %q, want %q", d, got, want)
		}
	}
}
