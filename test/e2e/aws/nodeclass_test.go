package aws_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestDefaultClassAndPoolBecomeReady: the v1 document's EC2NodeClass and
// NodePool (as StartAWS creates them) become Ready, and the class status
// lists what the account has: the three subnets, the two security groups,
// the newest AL2023 AMI of each image line with its requirements, and the
// instance profile of KarpenterNodeRole-dovetail.
func TestDefaultClassAndPoolBecomeReady(t *testing.T) {
	cluster.Begin(t)
	want := localcluster.DefaultEC2NodeClass(cluster.AWS.ClusterName())
	nc := cluster.WaitClassReady(t, want.Name, 2*time.Minute)
	if len(nc.Spec.AMISelectorTerms) != 1 || nc.Spec.AMISelectorTerms[0].Alias != "al2023@latest" || nc.Spec.Role != want.Spec.Role {
		t.Errorf("EC2NodeClass %s spec is not the v1 document's: %+v", nc.Name, nc.Spec)
	}
	for _, c := range []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
		awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeValidationSucceeded} {
		if !meta.IsStatusConditionTrue(nc.Status.Conditions, c) {
			t.Errorf("condition %s is not True: %+v", c, meta.FindStatusCondition(nc.Status.Conditions, c))
		}
	}

	// Subnets: one per zone, with its zone ID.
	var wantSubnets []awsv1.Subnet
	for _, sn := range cluster.Seed().Subnets {
		wantSubnets = append(wantSubnets, awsv1.Subnet{ID: sn.ID, Zone: sn.Zone, ZoneID: sn.ZoneID})
	}
	if !sameElements(nc.Status.Subnets, wantSubnets) {
		t.Errorf("status.subnets = %+v, want %+v", nc.Status.Subnets, wantSubnets)
	}
	for _, sn := range nc.Status.Subnets {
		if sn.ZoneID == "" || !strings.HasPrefix(sn.Zone, cluster.AWS.Region()) {
			t.Errorf("subnet %s has zone %q and zone ID %q", sn.ID, sn.Zone, sn.ZoneID)
		}
	}
	// Security groups: the cluster's and the nodes'.
	var gotGroups []string
	for _, g := range nc.Status.SecurityGroups {
		gotGroups = append(gotGroups, g.ID)
	}
	wantGroups := []string{cluster.Seed().ClusterSecurityGroup.ID, cluster.Seed().NodeSecurityGroup.ID}
	if !sameElements(gotGroups, wantGroups) {
		t.Errorf("status.securityGroups = %+v, want ids %v", nc.Status.SecurityGroups, wantGroups)
	}
	// AMIs: the newest AL2023 image of each line, none older, each with
	// requirements; the standard x86_64 and arm64 ones at least.
	latest := map[string]localaws.AMI{}
	var older []string
	for _, ami := range cluster.AWS.AMIs() {
		if ami.Family != localaws.FamilyAL2023 {
			continue
		}
		l, _ := cluster.AWS.LatestAMI(ami.Family, ami.Variant, ami.Arch)
		if l.Image.ID == ami.Image.ID {
			latest[ami.Image.ID] = ami
		} else {
			older = append(older, ami.Image.ID)
		}
	}
	seen := map[string]bool{}
	for _, ami := range nc.Status.AMIs {
		a, ok := latest[ami.ID]
		switch {
		case slices.Contains(older, ami.ID):
			t.Errorf("status.amis lists %s (%s), which is not its line's newest", ami.ID, ami.Name)
		case !ok:
			t.Errorf("status.amis lists %s (%s), which is no AL2023 image", ami.ID, ami.Name)
		default:
			seen[a.Variant+"/"+a.Arch] = true
		}
		if len(ami.Requirements) == 0 {
			t.Errorf("status.amis entry %s has no requirements", ami.ID)
		}
		if ami.Name == "" || ami.Deprecated {
			t.Errorf("status.amis entry %s: name %q, deprecated %v", ami.ID, ami.Name, ami.Deprecated)
		}
	}
	for _, line := range []string{localaws.VariantStandard + "/" + localaws.ArchX86_64, localaws.VariantStandard + "/" + localaws.ArchARM64} {
		if !seen[line] {
			t.Errorf("status.amis lacks the newest AL2023 %s image: %+v", line, nc.Status.AMIs)
		}
	}
	// The instance profile exists in IAM, with the class's role.
	if nc.Status.InstanceProfile == "" {
		t.Errorf("status.instanceProfile is empty")
	} else {
		found := false
		for _, p := range cluster.AWS.IAM().InstanceProfiles() {
			if p.Name == nc.Status.InstanceProfile {
				found = true
				if !slices.Equal(p.Roles, []string{want.Spec.Role}) {
					t.Errorf("instance profile %s has roles %v, want [%s]", p.Name, p.Roles, want.Spec.Role)
				}
			}
		}
		if !found {
			t.Errorf("status.instanceProfile %s is not an IAM instance profile", nc.Status.InstanceProfile)
		}
	}

	pool := localcluster.DefaultAWSNodePool()
	env.Eventually(t, time.Minute, "NodePool default to be Ready", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pool), pool); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionTypeReady) &&
			meta.IsStatusConditionTrue(pool.Status.Conditions, v1.ConditionTypeNodeClassReady), nil
	})
	t.Logf("class %s: %d subnets, %d security groups, %d AMIs, instance profile %s", nc.Name,
		len(nc.Status.Subnets), len(nc.Status.SecurityGroups), len(nc.Status.AMIs), nc.Status.InstanceProfile)
}

func sameElements[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// badClass is one invalid EC2NodeClass and what its status must say.
type badClass struct {
	class     *awsv1.EC2NodeClass
	condition string // the condition that is False
	field     string // the spec field its message names
	// admission, when set, is what the API server's refusal of the class
	// must say: the CRD rejects it, so it never reaches the controller.
	admission string
}

// TestBadClassesLaunchNothing: EC2NodeClasses that cannot launch (a subnet
// selector matching nothing, a role that does not exist, an unknown alias
// version or family, malformed Bottlerocket TOML, an AL2023 NodeConfig of
// the wrong kind) are Ready=False with a condition naming the field; a
// NodePool on each launches nothing for its pending pod, and no instance,
// launch template or instance profile is left behind.
func TestBadClassesLaunchNothing(t *testing.T) {
	s := cluster.Begin(t)
	base := func(name string) *awsv1.EC2NodeClass {
		nc := localcluster.DefaultEC2NodeClass(cluster.AWS.ClusterName())
		nc.Name = name
		return nc
	}
	noSubnets := base("bad-subnets")
	noSubnets.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "no-such-cluster"}}}
	noRole := base("bad-role")
	noRole.Spec.Role = "NoSuchRole-dovetail"
	badVersion := base("bad-alias-version")
	badVersion.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v1"}}
	badFamily := base("bad-alias-family")
	badFamily.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "foo@latest"}}
	badTOML := base("bad-toml")
	badTOML.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	badTOML.Spec.UserData = ptr.To("[settings.kubernetes\nmax-pods = \n")
	badKind := base("bad-nodeconfig")
	badKind.Spec.UserData = ptr.To("apiVersion: node.eks.aws/v1alpha1\nkind: Pod\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n")

	cases := []badClass{
		{class: noSubnets, condition: awsv1.ConditionTypeSubnetsReady, field: "spec.subnetSelectorTerms"},
		{class: noRole, condition: awsv1.ConditionTypeInstanceProfileReady, field: "NoSuchRole-dovetail"},
		{class: badVersion, condition: awsv1.ConditionTypeAMIsReady, field: "al2023@v1"},
		{class: badFamily, field: "spec.amiSelectorTerms[0].alias", admission: "family is not supported"},
		{class: badTOML, condition: awsv1.ConditionTypeValidationSucceeded, field: "spec.userData"},
		{class: badKind, condition: awsv1.ConditionTypeValidationSucceeded, field: "spec.userData"},
	}
	templatesBefore := len(cluster.AWS.EC2().LaunchTemplates())
	ns := s.Namespace()
	var names, pools []string
	for _, c := range cases {
		err := cluster.Client.Create(context.Background(), c.class)
		if c.admission != "" {
			if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), c.admission) {
				t.Errorf("creating EC2NodeClass %s: %v; want admission to refuse it naming %s (%q)", c.class.Name, err, c.field, c.admission)
			}
			if err == nil {
				s.TrackClass(c.class.Name)
			}
			continue
		}
		if err != nil {
			t.Fatalf("creating EC2NodeClass %s: %v", c.class.Name, err)
		}
		s.TrackClass(c.class.Name)
		names = append(names, c.class.Name)
		pool := s.Pool(awse2e.AWSPool("on-"+c.class.Name, c.class.Name))
		pools = append(pools, pool.Name)
		cluster.Create(t, awse2e.Deployment(ns, "app-"+c.class.Name, pool.Name, 1, "500m", "512Mi"))
	}
	for _, c := range cases {
		if !slices.Contains(names, c.class.Name) {
			continue
		}
		var cond *metav1.Condition
		env.Eventually(t, 2*time.Minute, fmt.Sprintf("EC2NodeClass %s to be Ready=False with %s False", c.class.Name, c.condition),
			func(ctx context.Context) (bool, error) {
				nc := &awsv1.EC2NodeClass{}
				if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(c.class), nc); err != nil {
					return false, err
				}
				cond = meta.FindStatusCondition(nc.Status.Conditions, c.condition)
				return meta.IsStatusConditionFalse(nc.Status.Conditions, v1.ConditionTypeReady) &&
					cond != nil && cond.Status == metav1.ConditionFalse, nil
			})
		if !strings.Contains(cond.Message, c.field) {
			t.Errorf("EC2NodeClass %s: condition %s (%s) says %q; want it to name %s", c.class.Name, c.condition, cond.Reason, cond.Message, c.field)
		}
		t.Logf("EC2NodeClass %s: %s=False %s: %s", c.class.Name, c.condition, cond.Reason, cond.Message)
	}
	for _, name := range pools {
		env.Eventually(t, time.Minute, "NodePool "+name+" to report its NodeClass not ready", func(ctx context.Context) (bool, error) {
			np := &v1.NodePool{}
			if err := cluster.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
				return false, err
			}
			return meta.IsStatusConditionFalse(np.Status.Conditions, v1.ConditionTypeNodeClassReady) &&
				meta.IsStatusConditionFalse(np.Status.Conditions, v1.ConditionTypeReady), nil
		})
	}
	// A class naming a role IAM does not have gets no instance profile at all.
	for _, p := range cluster.AWS.IAM().InstanceProfiles() {
		if p.Tags[awse2e.TagNodeClass] == noRole.Name {
			t.Errorf("instance profile %s was created for EC2NodeClass %s, whose role does not exist", p.Name, noRole.Name)
		}
	}
	// The pods stay pending: nothing is launched for them over a while.
	expectNothingLaunched(t, 15*time.Second, pools, names)
	running := 0
	for _, c := range cases {
		pods, err := cluster.RunningPods(context.Background(), ns, "app-"+c.class.Name)
		if err != nil {
			t.Fatal(err)
		}
		running += len(pods)
	}
	if running != 0 {
		t.Errorf("%d pods of the bad classes' pools are Running", running)
	}
	if n := len(cluster.AWS.EC2().LaunchTemplates()); n != templatesBefore {
		t.Errorf("%d launch templates exist, %d before the bad classes", n, templatesBefore)
	}
	// Delete the classes now (the teardown would too) and check that none
	// leaves an instance profile behind.
	for _, name := range names {
		_ = cluster.Client.Delete(context.Background(), &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	env.Eventually(t, 2*time.Minute, "the bad classes' instance profiles to be gone", func(ctx context.Context) (bool, error) {
		for _, p := range cluster.AWS.IAM().InstanceProfiles() {
			if slices.Contains(names, p.Tags[awse2e.TagNodeClass]) {
				return false, nil
			}
		}
		return true, nil
	})
}

// expectNothingLaunched checks over d that the pools get no NodeClaim, no
// instance, and that no launch template is made for the classes.
func expectNothingLaunched(t *testing.T, d time.Duration, pools, classes []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for ctx.Err() == nil {
		for _, pool := range pools {
			if claims := cluster.PoolClaims(t, pool); len(claims) > 0 {
				t.Fatalf("NodeClaim %s was created for NodePool %s; want none", claims[0].Name, pool)
			}
		}
		if insts := cluster.LiveInstances(pools...); len(insts) > 0 {
			t.Fatalf("instance %s was launched for NodePool %s; want none", insts[0].ID, insts[0].Tags[awse2e.TagNodePool])
		}
		for _, lt := range cluster.AWS.EC2().LaunchTemplates() {
			if slices.Contains(classes, lt.Tags[awse2e.TagNodeClass]) {
				t.Fatalf("launch template %s was created for EC2NodeClass %s", lt.Name, lt.Tags[awse2e.TagNodeClass])
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}
