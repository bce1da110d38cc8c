package cloudprovider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAllocatable(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		capacity corev1.ResourceList
		overhead *InstanceTypeOverhead
		want     map[corev1.ResourceName]string
	}{
		"no overhead": {
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("4Gi")},
			want:     map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "4Gi"},
		},
		"all three reservations": {
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("8Gi"), corev1.ResourcePods: q("29")},
			overhead: &InstanceTypeOverhead{
				KubeReserved:      corev1.ResourceList{corev1.ResourceCPU: q("70m"), corev1.ResourceMemory: q("574Mi")},
				SystemReserved:    corev1.ResourceList{corev1.ResourceMemory: q("100Mi")},
				EvictionThreshold: corev1.ResourceList{corev1.ResourceMemory: q("100Mi")},
			},
			want: map[corev1.ResourceName]string{corev1.ResourceCPU: "1930m", corev1.ResourceMemory: "7418Mi", corev1.ResourcePods: "29"},
		},
		"hugepages come out of memory": {
			capacity: corev1.ResourceList{corev1.ResourceMemory: q("4Gi"), "hugepages-2Mi": q("1Gi")},
			want:     map[corev1.ResourceName]string{corev1.ResourceMemory: "3Gi", "hugepages-2Mi": "1Gi"},
		},
		"never negative": {
			capacity: corev1.ResourceList{corev1.ResourceCPU: q("100m")},
			overhead: &InstanceTypeOverhead{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: q("1")}},
			want:     map[corev1.ResourceName]string{corev1.ResourceCPU: "0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			it := &InstanceType{Capacity: tc.capacity, Overhead: tc.overhead}
			got := map[corev1.ResourceName]string{}
			for k, v := range it.Allocatable() {
				got[k] = v.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Allocatable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheapestOffering(t *testing.T) {
	it := &InstanceType{Offerings: []Offering{
		{Zone: "a", CapacityType: "on-demand", Price: 1, Available: true},
		{Zone: "b", CapacityType: "spot", Price: 0.3, Available: false},
		{Zone: "c", CapacityType: "spot", Price: 0.4, Available: true},
		{Zone: "d", CapacityType: "spot", Price: 0.4, Available: true},
	}}
	cases := map[string]struct {
		allowed func(Offering) bool
		want    string
		wantOK  bool
	}{
		"any":            {want: "c", wantOK: true},
		"on-demand only": {allowed: func(o Offering) bool { return o.CapacityType == "on-demand" }, want: "a", wantOK: true},
		"unavailable":    {allowed: func(o Offering) bool { return o.Zone == "b" }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, ok := it.CheapestOffering(tc.allowed)
			if ok != tc.wantOK || (ok && o.Zone != tc.want) {
				t.Errorf("CheapestOffering = %+v, %v; want zone %q, %v", o, ok, tc.want, tc.wantOK)
			}
		})
	}
}
