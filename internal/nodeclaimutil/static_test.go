package nodeclaimutil

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

func TestForStaticPool(t *testing.T) {
	t.Parallel()
	small := dtesting.MakeInstanceType("small").CPU("2").Arch("amd64").
		Offering("zone-a", v1.CapacityTypeSpot, 0.03, true).Offering("zone-a", v1.CapacityTypeOnDemand, 0.10, true).Obj()
	medium := dtesting.MakeInstanceType("medium").CPU("4").Arch("amd64").
		Offering("zone-b", v1.CapacityTypeOnDemand, 0.20, true).Offering("zone-a", v1.CapacityTypeOnDemand, 0.25, false).Obj()
	arm := dtesting.MakeInstanceType("arm").CPU("4").Arch("arm64").Offering("zone-a", v1.CapacityTypeOnDemand, 0.05, true).Obj()
	sold := dtesting.MakeInstanceType("sold-out").Arch("amd64").Offering("zone-a", v1.CapacityTypeOnDemand, 0.01, false).Obj()
	all := []*cloudprovider.InstanceType{medium, sold, arm, small}

	cases := map[string]struct {
		pool      *v1.NodePool
		types     []*cloudprovider.InstanceType
		maxTypes  int
		wantTypes []string
		wantPrice float64
		wantReqs  map[string][]string // key -> In values
		wantErr   string
	}{
		"cheapest first, unavailable types left out": {
			pool: dtesting.MakeNodePool("static").Obj(), types: all,
			wantTypes: []string{"small", "arm", "medium"}, wantPrice: 0.03,
			wantReqs: map[string][]string{
				corev1.LabelInstanceTypeStable: {"arm", "medium", "small"},
				corev1.LabelTopologyZone:       {"zone-a", "zone-b"},
				v1.CapacityTypeLabelKey:        {v1.CapacityTypeOnDemand, v1.CapacityTypeSpot},
				v1.NodePoolLabelKey:            {"static"},
			},
		},
		"the pool's requirements narrow types and offerings": {
			pool: dtesting.MakeNodePool("static").Req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64").
				Req(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand).Obj(),
			types:     all,
			wantTypes: []string{"small", "medium"}, wantPrice: 0.10,
			wantReqs: map[string][]string{
				corev1.LabelInstanceTypeStable: {"medium", "small"},
				corev1.LabelTopologyZone:       {"zone-a", "zone-b"},
				v1.CapacityTypeLabelKey:        {v1.CapacityTypeOnDemand},
			},
		},
		"a zone requirement": {
			pool:  dtesting.MakeNodePool("static").Req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-b").Obj(),
			types: all, wantTypes: []string{"medium"}, wantPrice: 0.20,
			wantReqs: map[string][]string{corev1.LabelTopologyZone: {"zone-b"}},
		},
		"at most maxTypes": {
			pool: dtesting.MakeNodePool("static").Obj(), types: all, maxTypes: 2,
			wantTypes: []string{"small", "arm"}, wantPrice: 0.03,
		},
		"nothing launchable": {
			pool:    dtesting.MakeNodePool("static").Req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x").Obj(),
			types:   all,
			wantErr: "no instance type of nodepool static has an available offering",
		},
		"no instance types": {
			pool: dtesting.MakeNodePool("static").Obj(), wantErr: "no instance type",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.pool.Spec.Replicas = ptr.To[int64](3)
			claim, err := ForStaticPool(simulator.NodePool{NodePool: tc.pool, InstanceTypes: tc.types}, tc.maxTypes)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, it := range claim.InstanceTypes {
				names = append(names, it.Name)
			}
			if diff := cmp.Diff(tc.wantTypes, names); diff != "" {
				t.Errorf("instance types (-want +got):\n%s", diff)
			}
			if claim.Price != tc.wantPrice || claim.NodePool != tc.pool.Name || len(claim.Pods) != 0 {
				t.Errorf("price %v pool %q pods %d, want %v %q 0", claim.Price, claim.NodePool, len(claim.Pods), tc.wantPrice, tc.pool.Name)
			}
			for key, want := range tc.wantReqs {
				req, ok := claim.Requirements.Get(key)
				if !ok {
					t.Errorf("no requirement on %s", key)
					continue
				}
				if diff := cmp.Diff(want, req.Values()); diff != "" {
					t.Errorf("requirement %s values (-want +got):\n%s", key, diff)
				}
			}
			nc := FromPlan(claim, tc.pool)
			if nc.Labels[v1.NodePoolLabelKey] != tc.pool.Name || len(nc.Spec.Resources.Requests) != 0 {
				t.Errorf("rendered claim labels %v requests %v", nc.Labels, nc.Spec.Resources.Requests)
			}
		})
	}
}
