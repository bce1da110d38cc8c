package aws_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	awsprovider "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/tagging"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// claimFor is a NodeClaim of NodePool "default" on the class, allowing the
// given instance types and capacity types.
func claimFor(name, class string, types, capacityTypes []string) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "default"}}}
	nc.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: class}
	nc.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: types},
		{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: capacityTypes},
	}
	nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return nc
}

// TestLaunchDescribeDriftTerminate drives the provider as the core does:
// Create launches the cheapest offering through a launch template, Get and
// List find the instance, a newer AMI drifts it, Delete terminates it.
func TestLaunchDescribeDriftTerminate(t *testing.T) {
	h := newHarness(t, "launch")
	ctx := context.Background()
	h.createClass(t, h.defaultClass("launch"))
	h.reconcile(t, "launch")
	cp := h.rt.CloudProvider

	// Insufficient capacity on the cheapest on-demand offering of c5.large
	// in every zone: the launch goes to the next type.
	for _, zone := range []string{"us-east-1a", "us-east-1b", "us-east-1c"} {
		h.server.SetInsufficientCapacity("c5.large", zone, localec2.CapacityTypeOnDemand, true)
	}
	claim := claimFor("launch-1", "launch", []string{"c5.large", "m5.large"}, []string{"on-demand"})
	launched, err := cp.Create(ctx, claim)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := launched.Labels[corev1.LabelInstanceTypeStable]; got != "m5.large" {
		t.Fatalf("launched %s, want m5.large (c5.large has no capacity)", got)
	}
	if launched.Labels[karpv1.CapacityTypeLabelKey] != "on-demand" || launched.Labels[awsprovider.ZoneIDLabelKey] == "" ||
		!strings.HasPrefix(launched.Status.ProviderID, "aws:///us-east-1") || !strings.HasPrefix(launched.Status.ImageID, "ami-") {
		t.Fatalf("launched claim labels %v, provider id %q, image %q", launched.Labels, launched.Status.ProviderID, launched.Status.ImageID)
	}
	if launched.Status.Allocatable.Cpu().MilliValue() != 1930 {
		t.Errorf("allocatable cpu = %v, want m5.large's 1930m", launched.Status.Allocatable.Cpu())
	}
	instances := h.server.EC2().Instances()
	if len(instances) != 1 {
		t.Fatalf("EC2 has %d instances, want 1", len(instances))
	}
	inst := instances[0]
	for key, want := range map[string]string{
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "launch-1", "eks:eks-cluster-name": "launch",
		"karpenter.k8s.aws/ec2nodeclass": "launch", "kubernetes.io/cluster/launch": "owned",
	} {
		if inst.Tags[key] != want {
			t.Errorf("instance tag %s = %q, want %q", key, inst.Tags[key], want)
		}
	}
	if !strings.HasPrefix(inst.LaunchTemplateName, "karpenter.k8s.aws/") || !strings.Contains(string(inst.UserData), "launch-1") && !strings.Contains(string(inst.UserData), "name: launch") {
		t.Errorf("instance template %q, user data:\n%s", inst.LaunchTemplateName, inst.UserData)
	}
	// The same claim launched again gets the same instance: no second one.
	if again, err := cp.Create(ctx, claim); err != nil || again.Status.ProviderID != launched.Status.ProviderID {
		t.Fatalf("second Create = %v, %v; want the first instance", again, err)
	}
	if n := len(h.server.EC2().Instances()); n != 1 {
		t.Fatalf("EC2 has %d instances after a retried Create, want 1", n)
	}
	if got, err := cp.Get(ctx, launched.Status.ProviderID); err != nil || got.Labels[karpv1.NodePoolLabelKey] != "default" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	list, err := cp.List(ctx)
	if err != nil || len(list) != 1 || list[0].Status.ProviderID != launched.Status.ProviderID {
		t.Fatalf("List = %v, %v; want the one instance", list, err)
	}
	// The marked offerings are unavailable to the next simulation.
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	np.Spec.Template.Spec.NodeClassRef = claim.Spec.NodeClassRef
	its, err := cp.GetInstanceTypes(ctx, np)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == "c5.large" })
	if i < 0 {
		t.Fatal("no c5.large among the instance types")
	}
	for _, o := range its[i].Offerings {
		if o.CapacityType == "on-demand" && o.Available {
			t.Errorf("c5.large on-demand in %s is still available after insufficient capacity", o.Zone)
		}
	}

	// Not drifted; then a newer AL2023 AMI is published and resolved.
	if reason, err := cp.IsDrifted(ctx, launched); err != nil || reason != "" {
		t.Fatalf("IsDrifted = %q, %v; want no drift", reason, err)
	}
	if _, err := h.server.PublishAMI(localaws.FamilyAL2023, localaws.VariantStandard, localaws.ArchX86_64, "v20270101"); err != nil {
		t.Fatal(err)
	}
	h.clock.Step(2 * 60e9) // past the AMI cache
	h.reconcile(t, "launch")
	if reason, err := cp.IsDrifted(ctx, launched); err != nil || reason != awsprovider.DriftAMI {
		t.Fatalf("IsDrifted after a new AMI = %q, %v; want %s", reason, err, awsprovider.DriftAMI)
	}

	// Delete terminates; the instance is then gone to Get.
	if err := cp.Delete(ctx, launched); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Delete = %v, want NodeClaimNotFound once terminating", err)
	}
	if _, err := cp.Get(ctx, launched.Status.ProviderID); !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatalf("Get after Delete = %v, want NodeClaimNotFound", err)
	}
}

// TestCreateNeedsAReadyClass: a claim whose class is missing or not Ready
// gets a NodeClassNotReadyError and launches nothing.
func TestCreateNeedsAReadyClass(t *testing.T) {
	h := newHarness(t, "notready")
	ctx := context.Background()
	if _, err := h.rt.CloudProvider.Create(ctx, claimFor("c1", "missing", []string{"m5.large"}, []string{"on-demand"})); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Fatalf("Create on a missing class = %v, want NodeClassNotReady", err)
	}
	nc := h.defaultClass("notready")
	nc.Spec.Role = "NoSuchRole"
	h.createClass(t, nc)
	h.reconcile(t, "notready")
	if _, err := h.rt.CloudProvider.Create(ctx, claimFor("c2", "notready", []string{"m5.large"}, []string{"on-demand"})); !cloudprovider.IsNodeClassNotReadyError(err) {
		t.Fatalf("Create on a class that is not Ready = %v, want NodeClassNotReady", err)
	}
	if n := len(h.server.EC2().Instances()); n != 0 {
		t.Fatalf("EC2 has %d instances, want none", n)
	}
	if n := len(h.server.EC2().LaunchTemplates()); n != 0 {
		t.Fatalf("EC2 has %d launch templates, want none", n)
	}
}

// TestFinalizerWaitsForClaimsThenCleansUp: deleting a class that a
// NodeClaim uses waits for the claim; then its launch templates and
// instance profile are deleted and the class goes.
func TestFinalizerWaitsForClaimsThenCleansUp(t *testing.T) {
	h := newHarness(t, "final")
	ctx := context.Background()
	h.createClass(t, h.defaultClass("final"))
	nc := h.reconcile(t, "final")
	profile := nc.Status.InstanceProfile
	claim := claimFor("final-1", "final", []string{"m5.large"}, []string{"spot", "on-demand"})
	if _, err := h.rt.CloudProvider.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if n := len(h.server.EC2().LaunchTemplates()); n == 0 {
		t.Fatal("the launch made no launch template")
	}
	if err := testEnv.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), claim) })
	if err := testEnv.Client.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	// 1. A claim uses the class: nothing is removed.
	if got := h.reconcile(t, "final"); got == nil {
		t.Fatal("the class went while a NodeClaim uses it")
	}
	if n := len(h.server.EC2().LaunchTemplates()); n == 0 {
		t.Fatal("launch templates deleted while a NodeClaim uses the class")
	}
	// 2. The claim goes: templates, profile, then the class.
	if err := testEnv.Client.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if got := h.reconcile(t, "final"); got != nil {
		t.Fatalf("the class is still there: finalizers %v", got.Finalizers)
	}
	if n := len(h.server.EC2().LaunchTemplates()); n != 0 {
		t.Errorf("%d launch templates left after the class went", n)
	}
	for _, p := range h.server.IAM().InstanceProfiles() {
		if p.Name == profile {
			t.Errorf("instance profile %s left after the class went", profile)
		}
	}
}

// TestTaggingNamesRegisteredInstances: once a claim's Node registered, its
// instance is tagged Name=<node> (with the claim and cluster) and the claim
// is annotated so it is done once.
func TestTaggingNamesRegisteredInstances(t *testing.T) {
	h := newHarness(t, "tagging")
	ctx := context.Background()
	h.createClass(t, h.defaultClass("tagging"))
	h.reconcile(t, "tagging")
	launched, err := h.rt.CloudProvider.Create(ctx, claimFor("tagging-1", "tagging", []string{"m5.large"}, []string{"on-demand"}))
	if err != nil {
		t.Fatal(err)
	}
	claim := launched.DeepCopy()
	claim.ResourceVersion = ""
	if err := testEnv.Client.Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(context.Background(), claim) })
	// Not registered yet: nothing to do.
	if _, err := h.rt.Tagging.Reconcile(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if inst := h.server.EC2().Instances()[0]; inst.Tags["Name"] != "" {
		t.Fatalf("an unregistered claim's instance was named %q", inst.Tags["Name"])
	}
	claim.Status.NodeName = "ip-10-0-0-9.ec2.internal"
	claim.Status.ProviderID = launched.Status.ProviderID
	meta.SetStatusCondition(&claim.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeRegistered, Status: metav1.ConditionTrue, Reason: "Registered"})
	if err := testEnv.Client.Status().Update(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if _, err := h.rt.Tagging.Reconcile(ctx, claim); err != nil {
		t.Fatal(err)
	}
	inst := h.server.EC2().Instances()[0]
	if inst.Tags["Name"] != "ip-10-0-0-9.ec2.internal" || inst.Tags["karpenter.sh/nodeclaim"] != "tagging-1" {
		t.Fatalf("instance tags = %v, want Name and the claim", inst.Tags)
	}
	stored := &karpv1.NodeClaim{}
	if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(claim), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Annotations[tagging.TaggedAnnotationKey] != "true" {
		t.Fatalf("claim annotations = %v, want %s=true", stored.Annotations, tagging.TaggedAnnotationKey)
	}
}
