package fake

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

func claim(name string, reqs ...v1.NodeSelectorRequirementWithMinValues) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.NodePoolLabelKey: "default"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{Requirements: reqs},
			Resources:             v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
		},
	}
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reqs     []v1.NodeSelectorRequirementWithMinValues
		wantType string
		wantZone string
		wantCT   string
		wantICE  bool
	}{
		"cheapest that fits": {wantType: "fake-it-1", wantZone: Zone1, wantCT: v1.CapacityTypeSpot},
		"restricted to on-demand in zone-3": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{Zone3}},
			},
			wantType: "fake-it-1", wantZone: Zone3, wantCT: v1.CapacityTypeOnDemand,
		},
		"instance types listed": {
			reqs:     []v1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"fake-it-3", "fake-it-2"}}},
			wantType: "fake-it-2", wantZone: Zone1, wantCT: v1.CapacityTypeSpot,
		},
		"spot in zone-3 does not exist": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeSpot}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{Zone3}},
			},
			wantICE: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cp := NewCloudProvider()
			cp.InstanceTypes = InstanceTypes(4)
			got, err := cp.Create(ctx, claim("c", tc.reqs...))
			if tc.wantICE {
				if !cloudprovider.IsInsufficientCapacityError(err) {
					t.Fatalf("Create error = %v, want insufficient capacity", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			gotLabels := []string{got.Labels[corev1.LabelInstanceTypeStable], got.Labels[corev1.LabelTopologyZone], got.Labels[v1.CapacityTypeLabelKey]}
			if diff := cmp.Diff([]string{tc.wantType, tc.wantZone, tc.wantCT}, gotLabels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if got.Status.ProviderID == "" || got.Status.Allocatable.Cpu().IsZero() {
				t.Errorf("status not filled in: %+v", got.Status)
			}
			if len(cp.CreateCalls) != 1 {
				t.Errorf("CreateCalls = %d, want 1", len(cp.CreateCalls))
			}
		})
	}
}

func TestLifecycleAndInjectedErrors(t *testing.T) {
	ctx := context.Background()
	cp := NewCloudProvider()
	cp.InstanceTypes = InstanceTypes(2)
	cp.NextCreateErr = errors.New("injected")
	if _, err := cp.Create(ctx, claim("a")); err == nil || err.Error() != "injected" {
		t.Fatalf("Create error = %v, want injected", err)
	}
	created, err := cp.Create(ctx, claim("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Get(ctx, created.Status.ProviderID); err != nil {
		t.Fatalf("Get: %v", err)
	}
	list, _ := cp.List(ctx)
	if len(list) != 1 {
		t.Fatalf("List = %d claims, want 1", len(list))
	}
	if err := cp.Delete(ctx, created); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := cp.Delete(ctx, created); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("second Delete = %v, want not found", err)
	}
	if _, err := cp.Get(ctx, created.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after delete = %v, want not found", err)
	}
	if len(cp.DeleteCalls) != 2 || len(cp.GetCalls) != 2 {
		t.Errorf("recorded %d deletes and %d gets, want 2 and 2", len(cp.DeleteCalls), len(cp.GetCalls))
	}
	cp.Reset()
	if len(cp.CreateCalls) != 0 {
		t.Errorf("Reset kept calls")
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	cp := NewCloudProvider()
	cp.InstanceTypes = InstanceTypes(3)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			nc, err := cp.Create(ctx, claim("x"))
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = cp.Get(ctx, nc.Status.ProviderID)
			_, _ = cp.List(ctx)
			_ = cp.Delete(ctx, nc)
		})
	}
	wg.Wait()
	cp.Lock()
	defer cp.Unlock()
	if len(cp.CreateCalls) != 8 {
		t.Errorf("CreateCalls = %d, want 8", len(cp.CreateCalls))
	}
}

func TestInstanceTypesMatchBenchmarkSpec(t *testing.T) {
	its := InstanceTypes(400)
	last := its[399]
	if last.Name != "fake-it-399" || last.Capacity.Cpu().Value() != 400 || last.Capacity.Memory().Value() != 800<<30 || last.Capacity.Pods().Value() != 4000 {
		t.Errorf("fake-it-399 = %s cpu %s memory %s pods %s", last.Name, last.Capacity.Cpu(), last.Capacity.Memory(), last.Capacity.Pods())
	}
	if n := len(last.Offerings); n != 5 {
		t.Errorf("offerings = %d, want 5", n)
	}
	want := 0.1*400 + 0.1*float64(int64(800)<<30)/1e9
	if got := last.Offerings[0].Price; got != want {
		t.Errorf("price = %v, want %v", got, want)
	}
	alloc := last.Allocatable()
	if got := alloc.Cpu().MilliValue(); got != 399900 {
		t.Errorf("allocatable cpu = %dm, want 399900m", got)
	}
}
