package ec2types

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

func TestConvertKeepsAllocatableAndOfferings(t *testing.T) {
	types, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	converted := Convert(types)
	if len(converted) != len(types) {
		t.Fatalf("converted %d of %d types", len(converted), len(types))
	}
	for i, it := range converted {
		want := types[i].Allocatable
		got := it.Allocatable()
		for name, q := range want {
			if g := got[name]; g.Cmp(q) != 0 {
				t.Errorf("%s allocatable %s = %s, catalog says %s", it.Name, name, g.String(), q.String())
			}
		}
		if len(it.Offerings) != len(types[i].Offerings) {
			t.Errorf("%s has %d offerings, catalog %d", it.Name, len(it.Offerings), len(types[i].Offerings))
		}
		if r, ok := it.Requirements.Get(corev1.LabelInstanceTypeStable); !ok || !r.Has(it.Name) {
			t.Errorf("%s: instance-type requirement %v", it.Name, r)
		}
	}
}

func TestRequirements(t *testing.T) {
	types, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]catalog.InstanceType{}
	for _, it := range types {
		byName[it.Name] = it
	}
	gpuCount, _ := requirements.New(catalog.LabelInstanceGPUCount, corev1.NodeSelectorOpExists)
	cases := map[string]struct {
		instanceType string
		pod          requirements.Requirements
		compatible   bool
	}{
		"m5.large is general purpose": {instanceType: "m5.large", pod: requirements.FromLabels(map[string]string{catalog.LabelInstanceCategory: "m"}), compatible: true},
		"m5.large has no gpu":         {instanceType: "m5.large", pod: requirements.NewRequirements(gpuCount), compatible: false},
		"p3.2xlarge has a gpu":        {instanceType: "p3.2xlarge", pod: requirements.NewRequirements(gpuCount), compatible: true},
		"spot is offered":             {instanceType: "m5.large", pod: requirements.FromLabels(map[string]string{v1.CapacityTypeLabelKey: v1.CapacityTypeSpot}), compatible: true},
		"zone outside the region":     {instanceType: "m5.large", pod: requirements.FromLabels(map[string]string{corev1.LabelTopologyZone: "eu-west-1a"}), compatible: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			it, ok := byName[tc.instanceType]
			if !ok {
				t.Skipf("%s not in the catalog", tc.instanceType)
			}
			err := FromCatalog(it).Requirements.Intersects(tc.pod)
			if (err == nil) != tc.compatible {
				t.Errorf("Intersects = %v, want compatible %v", err, tc.compatible)
			}
		})
	}
}
