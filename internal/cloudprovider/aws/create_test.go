package aws

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

func catalogTypes(t *testing.T) []*cloudprovider.InstanceType {
	t.Helper()
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	return ec2types.FromCatalog(its)
}

func reqs(t *testing.T, rs ...karpv1.NodeSelectorRequirementWithMinValues) requirements.Requirements {
	t.Helper()
	out, err := requirements.FromNodePoolRequirements(rs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func in(key string, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
}

func TestLaunchPlan(t *testing.T) {
	all := catalogTypes(t)
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}
	cases := map[string]struct {
		reqs             requirements.Requirements
		wantCapacityType string
		wantFirstTypes   []string
		wantZones        []string
	}{
		"spot preferred": {
			reqs:             reqs(t, in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large", "m5.xlarge"), in(karpv1.CapacityTypeLabelKey, "spot", "on-demand")),
			wantCapacityType: "spot",
			wantZones:        []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		},
		"on-demand only": {
			reqs:             reqs(t, in(corev1.LabelInstanceTypeStable, "m5.large", "c5.large", "m5.xlarge"), in(karpv1.CapacityTypeLabelKey, "on-demand")),
			wantCapacityType: "on-demand",
			wantFirstTypes:   []string{"c5.large", "m5.large", "m5.xlarge"},
			wantZones:        []string{"us-east-1a", "us-east-1b", "us-east-1c"},
		},
		"zone pinned": {
			reqs:             reqs(t, in(corev1.LabelInstanceTypeStable, "m5.large"), in(corev1.LabelTopologyZone, "us-east-1b"), in(karpv1.CapacityTypeLabelKey, "on-demand")),
			wantCapacityType: "on-demand",
			wantFirstTypes:   []string{"m5.large"},
			wantZones:        []string{"us-east-1b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			candidates := compatible(all, tc.reqs, requests)
			ct := chooseCapacityType(candidates, tc.reqs)
			if ct != tc.wantCapacityType {
				t.Fatalf("capacity type = %s, want %s", ct, tc.wantCapacityType)
			}
			plan := launchPlan(candidates, tc.reqs, ct)
			var names []string
			for _, it := range plan.types {
				names = append(names, it.Name)
			}
			if tc.wantFirstTypes != nil {
				if diff := cmp.Diff(tc.wantFirstTypes, names); diff != "" {
					t.Errorf("types, cheapest first (-want +got):\n%s", diff)
				}
			}
			zones := map[string]bool{}
			for i, o := range plan.offerings {
				zones[o.Zone] = true
				if i > 0 && o.Price < plan.offerings[i-1].Price {
					t.Errorf("offering %d (%v) is cheaper than the one before it", i, o)
				}
			}
			var gotZones []string
			for z := range zones {
				gotZones = append(gotZones, z)
			}
			slices.Sort(gotZones)
			if diff := cmp.Diff(tc.wantZones, gotZones); diff != "" {
				t.Errorf("offering zones (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompatibleDropsTypesThatDoNotFit(t *testing.T) {
	all := catalogTypes(t)
	big := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	got := compatible(all, reqs(t, in(corev1.LabelInstanceTypeStable, "m5.large", "m5.xlarge")), big)
	if len(got) != 1 || got[0].Name != "m5.xlarge" {
		t.Fatalf("compatible = %v, want only m5.xlarge (m5.large has 1930m allocatable)", got)
	}
	// An offering marked unavailable everywhere leaves the type out.
	m5 := &cloudprovider.InstanceType{Name: got[0].Name, Requirements: got[0].Requirements, Capacity: got[0].Capacity,
		Overhead: got[0].Overhead, Offerings: slices.Clone(got[0].Offerings)}
	for i := range m5.Offerings {
		m5.Offerings[i].Available = false
	}
	if got := compatible([]*cloudprovider.InstanceType{m5}, reqs(t), big); len(got) != 0 {
		t.Fatalf("compatible kept a type with no available offering: %v", got)
	}
}

func TestDrift(t *testing.T) {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{awsv1.AnnotationEC2NodeClassHash: "1", awsv1.AnnotationEC2NodeClassHashVersion: "v"}},
		Status: awsv1.EC2NodeClassStatus{
			AMIs:           []awsv1.AMI{{ID: "ami-1"}},
			Subnets:        []awsv1.Subnet{{ID: "subnet-1"}},
			SecurityGroups: []awsv1.SecurityGroup{{ID: "sg-1"}, {ID: "sg-2"}},
		},
	}
	ok := instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1", SecurityGroupIDs: []string{"sg-2", "sg-1"}}
	cases := map[string]struct {
		change func(*instance.Instance)
		want   cloudprovider.DriftReason
	}{
		"none":            {change: func(*instance.Instance) {}},
		"ami":             {change: func(i *instance.Instance) { i.ImageID = "ami-0" }, want: DriftAMI},
		"subnet":          {change: func(i *instance.Instance) { i.SubnetID = "subnet-0" }, want: DriftSubnet},
		"security groups": {change: func(i *instance.Instance) { i.SecurityGroupIDs = []string{"sg-1"} }, want: DriftSecurityGroup},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			inst := ok
			inst.SecurityGroupIDs = slices.Clone(ok.SecurityGroupIDs)
			tc.change(&inst)
			if got := dynamicDrift(nc, &inst); got != tc.want {
				t.Fatalf("dynamicDrift = %q, want %q", got, tc.want)
			}
		})
	}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{awsv1.AnnotationEC2NodeClassHash: "1", awsv1.AnnotationEC2NodeClassHashVersion: "v"}}}
	if staticDrift(nc, claim) {
		t.Error("equal hashes drifted")
	}
	claim.Annotations[awsv1.AnnotationEC2NodeClassHash] = "0"
	if !staticDrift(nc, claim) {
		t.Error("a changed hash did not drift")
	}
	claim.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = "older"
	if staticDrift(nc, claim) {
		t.Error("hashes of different versions were compared")
	}
}
