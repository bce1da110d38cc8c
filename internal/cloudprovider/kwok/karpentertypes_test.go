package kwok

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// TestKarpenterKWOKInstanceTypes checks types of the set against the shapes,
// labels and prices Karpenter's kwok provider generates for them.
func TestKarpenterKWOKInstanceTypes(t *testing.T) {
	types := KarpenterKWOKInstanceTypes()
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	// Each row is a type's shape; its capacity, allocatable and labels
	// follow from it (20Gi of ephemeral storage each).
	cases := map[string]struct {
		family, cpu, memory, arch, os, pods string
		allocCPU, allocMemory               string
		onDemand                            float64
	}{
		"c-1x-amd64-linux":     {"c", "1", "2Gi", "amd64", "linux", "16", "900m", "2038Mi", 0.027147483648},
		"c-16x-amd64-linux":    {"c", "16", "32Gi", "amd64", "linux", "256", "15900m", "32758Mi", 0.434359738368},
		"s-48x-arm64-linux":    {"s", "48", "192Gi", "arm64", "linux", "768", "47900m", "196598Mi", 1.406158430208},
		"m-256x-arm64-windows": {"m", "256", "2Ti", "arm64", "windows", "1024", "255900m", "2097142Mi", 8.599023255552},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			it, ok := byName[name]
			if !ok {
				t.Fatalf("no instance type %s", name)
			}
			capacity := map[string]string{"cpu": tc.cpu, "memory": tc.memory, "pods": tc.pods, "ephemeral-storage": "20Gi"}
			allocatable := map[string]string{"cpu": tc.allocCPU, "memory": tc.allocMemory, "pods": tc.pods, "ephemeral-storage": "20Gi"}
			labels := map[string]string{
				"node.kubernetes.io/instance-type": name, "kubernetes.io/arch": tc.arch, "kubernetes.io/os": tc.os,
				"karpenter.kwok.sh/instance-family": tc.family, "karpenter.kwok.sh/instance-size": tc.cpu,
				"karpenter.kwok.sh/instance-cpu": tc.cpu, "karpenter.kwok.sh/instance-memory": tc.memory,
			}
			if diff := cmp.Diff(capacity, shownResources(it.Capacity)); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(allocatable, shownResources(it.Allocatable())); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(labels, it.Requirements.Labels()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			var got []string
			for _, o := range it.Offerings {
				want := tc.onDemand
				if o.CapacityType == v1.CapacityTypeSpot {
					want *= 0.7
				}
				if math.Abs(o.Price-want) > 1e-9 || !o.Available {
					t.Errorf("offering %s/%s: price %v available %v, want %v available", o.Zone, o.CapacityType, o.Price, o.Available, want)
				}
				got = append(got, o.Zone+"/"+o.CapacityType)
			}
			wantOfferings := []string{
				"test-zone-a/spot", "test-zone-a/on-demand", "test-zone-b/spot", "test-zone-b/on-demand",
				"test-zone-c/spot", "test-zone-c/on-demand", "test-zone-d/spot", "test-zone-d/on-demand",
			}
			if diff := cmp.Diff(wantOfferings, got); diff != "" {
				t.Errorf("offerings (-want +got):\n%s", diff)
			}
			for key, want := range map[string][]string{
				corev1.LabelTopologyZone: KarpenterKWOKZones(),
				v1.CapacityTypeLabelKey:  {v1.CapacityTypeSpot, v1.CapacityTypeOnDemand},
			} {
				r, ok := it.Requirements.Get(key)
				if !ok || !slices.Equal(slices.Sorted(slices.Values(r.Values())), slices.Sorted(slices.Values(want))) {
					t.Errorf("requirement on %s: %v, want In %v", key, r, want)
				}
			}
		})
	}
}

// TestKarpenterKWOKInstanceTypesWholeSet checks the set as a whole: 144
// distinct names in order, 3 families × 12 sizes × 2 architectures × 2
// operating systems, each named after its shape.
func TestKarpenterKWOKInstanceTypesWholeSet(t *testing.T) {
	types := KarpenterKWOKInstanceTypes()
	if len(types) != 144 {
		t.Fatalf("%d instance types, want 144", len(types))
	}
	names := make([]string, 0, len(types))
	counts := map[string]map[string]int{}
	for _, it := range types {
		names = append(names, it.Name)
		labels := it.Requirements.Labels()
		for _, key := range []string{InstanceFamilyLabelKey, InstanceCPULabelKey, corev1.LabelArchStable, corev1.LabelOSStable} {
			if counts[key] == nil {
				counts[key] = map[string]int{}
			}
			counts[key][labels[key]]++
		}
		want := labels[InstanceFamilyLabelKey] + "-" + labels[InstanceCPULabelKey] + "x-" + labels[corev1.LabelArchStable] + "-" + labels[corev1.LabelOSStable]
		if it.Name != want {
			t.Errorf("type %s has labels of %s", it.Name, want)
		}
		cpu, memory := it.Capacity[corev1.ResourceCPU], it.Capacity[corev1.ResourceMemory]
		perCPU := memory.Value() / cpu.Value() >> 30
		if wantPerCPU := map[string]int64{"c": 2, "s": 4, "m": 8}[labels[InstanceFamilyLabelKey]]; perCPU != wantPerCPU {
			t.Errorf("type %s has %d GiB per vCPU, want %d", it.Name, perCPU, wantPerCPU)
		}
	}
	if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("names are not sorted and distinct: %v", names)
	}
	want := map[string]map[string]int{
		InstanceFamilyLabelKey: {"c": 48, "s": 48, "m": 48},
		InstanceCPULabelKey: {
			"1": 12, "2": 12, "4": 12, "8": 12, "16": 12, "32": 12, "48": 12, "64": 12, "96": 12, "128": 12, "192": 12, "256": 12,
		},
		corev1.LabelArchStable: {"amd64": 72, "arm64": 72},
		corev1.LabelOSStable:   {"linux": 72, "windows": 72},
	}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("types per label value (-want +got):\n%s", diff)
	}
}

// TestKarpenterKWOKProvider: a provider built with the set offers it, picks
// from it the way manifests for Karpenter's kwok provider select, and
// refuses options that do not apply to it; the EC2 catalog stays the default.
func TestKarpenterKWOKProvider(t *testing.T) {
	c, _ := newTestProvider(t, Options{InstanceTypes: InstanceTypesKarpenterKWOK})
	its, err := c.GetInstanceTypes(context.Background(), nil)
	if err != nil || len(its) != 144 || its[0].Name != "c-128x-amd64-linux" {
		t.Fatalf("GetInstanceTypes: %d types starting %v (error %v), want the 144 Karpenter kwok types", len(its), its[0].Name, err)
	}
	q := resource.MustParse
	cases := map[string]struct {
		reqs     []v1.NodeSelectorRequirementWithMinValues
		requests corev1.ResourceList
		want     []string
	}{
		"instance type by name": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelInstanceTypeStable, "c-4x-amd64-linux")},
			want: []string{"c-4x-amd64-linux/test-zone-a/spot", "c-4x-amd64-linux/test-zone-b/spot"},
		},
		"family, cpu, arch and os labels, on demand": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				in(InstanceFamilyLabelKey, "s"), in(InstanceCPULabelKey, "8"), in(corev1.LabelArchStable, "arm64"),
				in(corev1.LabelOSStable, "linux"), in(v1.CapacityTypeLabelKey, v1.CapacityTypeOnDemand), in(corev1.LabelTopologyZone, "test-zone-c"),
			},
			want: []string{"s-8x-arm64-linux/test-zone-c/on-demand"},
		},
		"size and memory labels": {
			reqs: []v1.NodeSelectorRequirementWithMinValues{
				in(InstanceSizeLabelKey, "2"), in(InstanceMemoryLabelKey, "16Gi"), in(corev1.LabelTopologyZone, "test-zone-d"),
			},
			want: []string{"m-2x-amd64-linux/test-zone-d/spot", "m-2x-amd64-windows/test-zone-d/spot", "m-2x-arm64-linux/test-zone-d/spot"},
		},
		"requests pick the smallest that fits": {
			reqs:     []v1.NodeSelectorRequirementWithMinValues{in(corev1.LabelArchStable, "amd64"), in(corev1.LabelOSStable, "linux")},
			requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			want:     []string{"c-2x-amd64-linux/test-zone-a/spot"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ids(candidates(its, parse(t, tc.reqs), tc.requests), len(tc.want))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want +got):\n%s", diff)
			}
		})
	}

	ec2, _ := newTestProvider(t, Options{})
	if its, _ := ec2.GetInstanceTypes(context.Background(), nil); len(its) < 500 || strings.Contains(its[0].Name, "-") {
		t.Errorf("the default provider offers %d types starting %s, want the EC2 catalog", len(its), its[0].Name)
	}
	for name, opts := range map[string]Options{
		"unknown set":                  {InstanceTypes: "gcp"},
		"catalog options with the set": {InstanceTypes: InstanceTypesKarpenterKWOK, Catalog: &catalog.Options{}},
	} {
		if _, err := New(nil, nil, opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}

// shownResources renders a resource list's quantities as strings.
func shownResources(list corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}
