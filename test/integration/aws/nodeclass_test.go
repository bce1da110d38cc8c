package aws_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
)

// TestNodeClassResolvesTheSeededAccount: the v1 document's class, with only
// the discovery tag and role filled in, becomes Ready with the account's
// three subnets, two security groups, the newest AL2023 AMIs and an
// instance profile that holds the role.
func TestNodeClassResolvesTheSeededAccount(t *testing.T) {
	h := newHarness(t, "resolve")
	h.createClass(t, h.defaultClass("resolve"))
	nc := h.reconcile(t, "resolve")
	if ready := condition(t, nc, awsv1.ConditionTypeReady); ready.Status != metav1.ConditionTrue {
		t.Fatalf("Ready = %+v, conditions %+v", ready, nc.Status.Conditions)
	}
	var zones []string
	for _, s := range nc.Status.Subnets {
		zones = append(zones, s.Zone+"/"+s.ZoneID)
		if !strings.HasPrefix(s.ID, "subnet-") {
			t.Errorf("subnet id %q", s.ID)
		}
	}
	slices.Sort(zones)
	if diff := cmp.Diff([]string{"us-east-1a/use1-az1", "us-east-1b/use1-az2", "us-east-1c/use1-az3"}, zones); diff != "" {
		t.Errorf("subnet zones (-want +got):\n%s", diff)
	}
	if len(nc.Status.SecurityGroups) != 2 {
		t.Errorf("security groups = %+v, want the cluster and node groups", nc.Status.SecurityGroups)
	}
	latest := map[string]bool{}
	for _, a := range h.server.AMIs() {
		if l, ok := h.server.LatestAMI(a.Family, a.Variant, a.Arch); ok && a.Family == localaws.FamilyAL2023 {
			latest[l.Image.ID] = true
		}
	}
	if len(nc.Status.AMIs) == 0 {
		t.Fatal("no AMIs resolved")
	}
	for _, a := range nc.Status.AMIs {
		if !latest[a.ID] || !strings.HasPrefix(a.Name, "amazon-eks-node-al2023-") || len(a.Requirements) == 0 {
			t.Errorf("AMI %+v is not the newest AL2023 image of its line, or has no requirements", a)
		}
	}
	profiles := h.server.IAM().InstanceProfiles()
	found := false
	for _, p := range profiles {
		if p.Name == nc.Status.InstanceProfile {
			found = slices.Equal(p.Roles, []string{"KarpenterNodeRole-resolve"})
		}
	}
	if !found {
		t.Errorf("instance profile %q not in IAM with the node role: %+v", nc.Status.InstanceProfile, profiles)
	}
	if nc.Annotations[awsv1.AnnotationEC2NodeClassHash] == "" {
		t.Error("no hash annotation on the class")
	}
}

// TestNodeClassBadInput: each broken class is Ready=False with a condition
// naming the field, and no instance profile is left behind when the class goes.
func TestNodeClassBadInput(t *testing.T) {
	h := newHarness(t, "bad")
	cases := map[string]struct {
		change        func(*awsv1.EC2NodeClass)
		conditionType string
		field         string
	}{
		"subnets match nothing": {
			change: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"team": "nobody"}}}
			},
			conditionType: awsv1.ConditionTypeSubnetsReady, field: "spec.subnetSelectorTerms",
		},
		"security groups match nothing": {
			change: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "no-such-group"}}
			},
			conditionType: awsv1.ConditionTypeSecurityGroupsReady, field: "spec.securityGroupSelectorTerms",
		},
		"role does not exist": {
			change:        func(nc *awsv1.EC2NodeClass) { nc.Spec.Role = "NoSuchRole" },
			conditionType: awsv1.ConditionTypeInstanceProfileReady, field: "spec.role",
		},
		"alias version unknown": {
			change: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v19990101"}}
			},
			conditionType: awsv1.ConditionTypeAMIsReady, field: "spec.amiSelectorTerms",
		},
		"bottlerocket user data is not TOML": {
			change: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
				nc.Spec.UserData = ptr.To("[settings.kubernetes\nmax-pods = ")
			},
			conditionType: awsv1.ConditionTypeValidationSucceeded, field: "spec.userData",
		},
		"al2023 user data is a NodeConfig of the wrong kind": {
			change: func(nc *awsv1.EC2NodeClass) {
				nc.Spec.UserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfigTemplate\nspec: {}\n")
			},
			conditionType: awsv1.ConditionTypeValidationSucceeded, field: "spec.userData",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := h.defaultClass("bad-" + strings.ToLower(strings.NewReplacer(" ", "-").Replace(name)))
			tc.change(nc)
			h.createClass(t, nc)
			got := h.reconcile(t, nc.Name)
			requireFalseNaming(t, got, tc.conditionType, tc.field)
		})
	}
}
