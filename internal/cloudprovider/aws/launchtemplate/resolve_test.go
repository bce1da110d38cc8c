package launchtemplate

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

var cluster = Cluster{Name: "dovetail", Endpoint: "https://127.0.0.1:6443", CABundle: base64.StdEncoding.EncodeToString([]byte("ca")), CIDR: "10.100.0.0/16", DNS: []string{"10.100.0.10"}}

// types returns catalog instance types by name.
func types(t *testing.T, names ...string) []*cloudprovider.InstanceType {
	t.Helper()
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	all := ec2types.FromCatalog(its)
	var out []*cloudprovider.InstanceType
	for _, n := range names {
		i := slices.IndexFunc(all, func(it *cloudprovider.InstanceType) bool { return it.Name == n })
		if i < 0 {
			t.Fatalf("no catalog type %s", n)
		}
		out = append(out, all[i])
	}
	return out
}

func nodeClass() *awsv1.EC2NodeClass {
	arch := func(a string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}
	}
	noGPU := corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist}
	gpu := corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}
	return &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			Role:             "KarpenterNodeRole-dovetail",
		},
		Status: awsv1.EC2NodeClassStatus{
			AMIs: []awsv1.AMI{
				{ID: "ami-nvidia", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"), gpu}},
				{ID: "ami-amd64", Requirements: []corev1.NodeSelectorRequirement{arch("amd64"), noGPU}},
				{ID: "ami-arm64", Requirements: []corev1.NodeSelectorRequirement{arch("arm64"), noGPU}},
			},
			SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-2"}, {ID: "sg-1"}},
			InstanceProfile: "dovetail_1",
		},
	}
}

func nodeClaim() *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "default-abc", Labels: map[string]string{karpv1.NodePoolLabelKey: "default", "team": "a"}},
		Spec: karpv1.NodeClaimSpec{NodeClaimTemplateSpec: karpv1.NodeClaimTemplateSpec{
			Taints:        []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
			StartupTaints: []corev1.Taint{{Key: "cni", Effect: corev1.TaintEffectNoSchedule}},
		}},
	}
}

// TestResolveGroupsTypesByAMIAndMaxPods: each type takes the first AMI
// whose requirements it meets, and one template is made per (AMI, max
// pods), carrying that max pods in its user data.
func TestResolveGroupsTypesByAMIAndMaxPods(t *testing.T) {
	templates, err := Resolve(cluster, Input{
		NodeClass: nodeClass(), NodeClaim: nodeClaim(), CapacityType: "spot",
		InstanceTypes: types(t, "m5.large", "c5.large", "m5.xlarge", "m6g.large", "g5.xlarge"),
		Tags:          map[string]string{"karpenter.sh/nodepool": "default"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, tpl := range templates {
		key := tpl.ImageID + "/" + maxPodsOf(t, tpl)
		got[key] = append(got[key], tpl.InstanceTypes...)
		if !strings.HasPrefix(tpl.Name, NamePrefix) {
			t.Errorf("template name %q lacks %s", tpl.Name, NamePrefix)
		}
	}
	want := map[string][]string{
		"ami-amd64/29":  {"m5.large", "c5.large"},
		"ami-amd64/58":  {"m5.xlarge"},
		"ami-arm64/29":  {"m6g.large"},
		"ami-nvidia/58": {"g5.xlarge"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("templates (-want +got):\n%s", diff)
	}
}

// maxPodsOf reads the max pods the template's AL2023 user data sets.
func maxPodsOf(t *testing.T, tpl Template) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(*tpl.Data.UserData)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxPods: "); ok {
			return v
		}
	}
	t.Fatalf("no maxPods in user data:\n%s", raw)
	return ""
}

func TestResolveTemplateData(t *testing.T) {
	nc := nodeClass()
	nc.Spec.DetailedMonitoring = ptr.To(true)
	nc.Spec.AssociatePublicIPAddress = ptr.To(false)
	templates, err := Resolve(cluster, Input{
		NodeClass: nc, NodeClaim: nodeClaim(), CapacityType: "spot", InstanceTypes: types(t, "m5.large"),
		Tags: map[string]string{"karpenter.sh/nodepool": "default"},
	})
	if err != nil || len(templates) != 1 {
		t.Fatalf("Resolve = %v, %v; want one template", templates, err)
	}
	d := templates[0].Data
	if *d.ImageId != "ami-amd64" || *d.IamInstanceProfile.Name != "dovetail_1" || !*d.Monitoring.Enabled {
		t.Errorf("image %s, profile %s, monitoring %v", *d.ImageId, *d.IamInstanceProfile.Name, *d.Monitoring.Enabled)
	}
	if diff := cmp.Diff([]string{"sg-1", "sg-2"}, d.NetworkInterfaces[0].Groups); diff != "" || *d.NetworkInterfaces[0].AssociatePublicIpAddress {
		t.Errorf("network interface groups (-want +got):\n%s, public IP %v", diff, *d.NetworkInterfaces[0].AssociatePublicIpAddress)
	}
	if len(d.BlockDeviceMappings) != 1 || *d.BlockDeviceMappings[0].DeviceName != "/dev/xvda" || *d.BlockDeviceMappings[0].Ebs.VolumeSize != 20 ||
		!*d.BlockDeviceMappings[0].Ebs.Encrypted || d.BlockDeviceMappings[0].Ebs.VolumeType != "gp3" {
		t.Errorf("block devices = %+v, want AL2023's 20 GiB encrypted gp3 root", d.BlockDeviceMappings)
	}
	if m := d.MetadataOptions; m.HttpEndpoint != "enabled" || m.HttpTokens != "required" || *m.HttpPutResponseHopLimit != 1 || m.InstanceMetadataTags != "disabled" {
		t.Errorf("metadata options = %+v, want the v1 defaults", m)
	}
	var resourceTypes []string
	for _, ts := range d.TagSpecifications {
		resourceTypes = append(resourceTypes, string(ts.ResourceType))
	}
	if diff := cmp.Diff([]string{"network-interface", "spot-instances-request"}, resourceTypes); diff != "" {
		t.Errorf("tagged resource types (-want +got):\n%s", diff)
	}
	raw, _ := base64.StdEncoding.DecodeString(*d.UserData)
	for _, want := range []string{"name: dovetail", "apiServerEndpoint: https://127.0.0.1:6443", "cidr: 10.100.0.0/16",
		"key: dedicated", "key: cni", "key: karpenter.sh/unregistered", "team=a", "karpenter.sh/capacity-type=spot", "karpenter.k8s.aws/ec2nodeclass=default"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("user data lacks %q:\n%s", want, raw)
		}
	}
}

// TestResolveNamesAreStable: the same inputs give the same template name;
// any change to what goes in gives another.
func TestResolveNamesAreStable(t *testing.T) {
	name := func(change func(*awsv1.EC2NodeClass, *karpv1.NodeClaim)) string {
		nc, claim := nodeClass(), nodeClaim()
		change(nc, claim)
		templates, err := Resolve(cluster, Input{NodeClass: nc, NodeClaim: claim, CapacityType: "on-demand", InstanceTypes: types(t, "m5.large"),
			Tags: map[string]string{"karpenter.sh/nodepool": "default"}})
		if err != nil {
			t.Fatal(err)
		}
		return templates[0].Name
	}
	base := name(func(*awsv1.EC2NodeClass, *karpv1.NodeClaim) {})
	if again := name(func(*awsv1.EC2NodeClass, *karpv1.NodeClaim) {}); again != base {
		t.Fatalf("same inputs named %s then %s", base, again)
	}
	changes := map[string]func(*awsv1.EC2NodeClass, *karpv1.NodeClaim){
		"AMI": func(nc *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) { nc.Status.AMIs[1].ID = "ami-new" },
		"security groups": func(nc *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) {
			nc.Status.SecurityGroups = nc.Status.SecurityGroups[:1]
		},
		"instance profile": func(nc *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) { nc.Status.InstanceProfile = "other" },
		"kubelet": func(nc *awsv1.EC2NodeClass, _ *karpv1.NodeClaim) {
			nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](20)}
		},
		"labels": func(_ *awsv1.EC2NodeClass, c *karpv1.NodeClaim) { c.Labels["team"] = "b" },
		"taints": func(_ *awsv1.EC2NodeClass, c *karpv1.NodeClaim) { c.Spec.Taints = nil },
	}
	for what, change := range changes {
		if got := name(change); got == base {
			t.Errorf("changing the %s kept the template name %s", what, got)
		}
	}
}

func TestResolveFailsWithoutASuitableAMI(t *testing.T) {
	nc := nodeClass()
	nc.Status.AMIs = nc.Status.AMIs[2:] // arm64 only
	if _, err := Resolve(cluster, Input{NodeClass: nc, NodeClaim: nodeClaim(), CapacityType: "spot", InstanceTypes: types(t, "m5.large")}); err == nil {
		t.Fatal("Resolve found a template for an amd64 type with only an arm64 AMI")
	}
}

func TestBottlerocketBlockDevicesAndCustom(t *testing.T) {
	nc := nodeClass()
	nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyBottlerocket)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	var devices []string
	for _, m := range blockDeviceMappings(nc) {
		devices = append(devices, *m.DeviceName)
	}
	if diff := cmp.Diff([]string{"/dev/xvda", "/dev/xvdb"}, devices); diff != "" {
		t.Errorf("bottlerocket devices (-want +got):\n%s", diff)
	}
	nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-1"}}
	if got := blockDeviceMappings(nc); len(got) != 0 {
		t.Errorf("custom family got default block devices %v", got)
	}
}

// TestSuitedToAMIs: only the types some resolved AMI suits are offered, in
// their order; a class with x86_64 images only offers no Graviton type, and
// one without its GPU image offers no GPU type.
func TestSuitedToAMIs(t *testing.T) {
	all := types(t, "m6g.large", "m5.large", "g5.xlarge", "c7g.xlarge", "c5.large")
	amis := nodeClass().Status.AMIs // nvidia amd64, amd64, arm64
	names := func(its []*cloudprovider.InstanceType) []string {
		out := []string{}
		for _, it := range its {
			out = append(out, it.Name)
		}
		return out
	}
	cases := map[string]struct {
		amis []awsv1.AMI
		want []string
	}{
		"every variant":      {amis: amis, want: []string{"m6g.large", "m5.large", "g5.xlarge", "c7g.xlarge", "c5.large"}},
		"amd64 without GPUs": {amis: amis[1:2], want: []string{"m5.large", "c5.large"}},
		"arm64 only":         {amis: amis[2:], want: []string{"m6g.large", "c7g.xlarge"}},
		"no AMIs":            {want: []string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(SuitedToAMIs(tc.amis, all))); diff != "" {
				t.Errorf("SuitedToAMIs (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkSuitedToAMIs filters the whole catalog by the three AMIs of an
// al2023@latest class (standard and NVIDIA amd64, standard arm64).
func BenchmarkSuitedToAMIs(b *testing.B) {
	its, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	all := ec2types.FromCatalog(its)
	amis := nodeClass().Status.AMIs
	for b.Loop() {
		SuitedToAMIs(amis, all)
	}
}
