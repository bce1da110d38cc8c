package nodeclass

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instanceprofile"
)

// stubs answer the providers' questions from fields.
type stubs struct {
	subnets  []ec2types.Subnet
	groups   []ec2types.SecurityGroup
	amis     []v1.AMI
	amiErr   error
	profErr  error
	deleted  []string
	ltDelete []string
}

type subnetStub struct{ *stubs }

func (s subnetStub) List(context.Context, []v1.SubnetSelectorTerm) ([]ec2types.Subnet, error) {
	return s.subnets, nil
}

type groupStub struct{ *stubs }

func (s groupStub) List(context.Context, []v1.SecurityGroupSelectorTerm) ([]ec2types.SecurityGroup, error) {
	return s.groups, nil
}

type amiStub struct{ *stubs }

func (s amiStub) List(context.Context, *v1.EC2NodeClass) ([]v1.AMI, error) { return s.amis, s.amiErr }

type profileStub struct{ *stubs }

func (s profileStub) Resolve(context.Context, *v1.EC2NodeClass) (string, error) {
	return "demo_123", s.profErr
}

func (s profileStub) Delete(_ context.Context, nc *v1.EC2NodeClass) error {
	s.deleted = append(s.deleted, nc.Name)
	return nil
}

func newTestController(t *testing.T, objs ...client.Object) (*Controller, client.Client, *stubs) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := karpv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&v1.EC2NodeClass{}).Build()
	s := &stubs{
		subnets: []ec2types.Subnet{{SubnetId: aws.String("subnet-b"), AvailabilityZone: aws.String("us-east-1b"), AvailabilityZoneId: aws.String("use1-az2")},
			{SubnetId: aws.String("subnet-a"), AvailabilityZone: aws.String("us-east-1a"), AvailabilityZoneId: aws.String("use1-az1")}},
		groups: []ec2types.SecurityGroup{{GroupId: aws.String("sg-1"), GroupName: aws.String("nodes")}},
		amis:   []v1.AMI{{ID: "ami-1", Name: "n"}},
	}
	c := NewController(kube, testclock.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)), Dependencies{
		Subnets: subnetStub{s}, SecurityGroups: groupStub{s}, AMIs: amiStub{s}, InstanceProfiles: profileStub{s},
		ValidateUserData: func(family, userData string) error {
			if userData == "bad" {
				return errors.New("does not parse")
			}
			return nil
		},
		DeleteLaunchTemplates: func(_ context.Context, name string) error { s.ltDelete = append(s.ltDelete, name); return nil },
	})
	return c, kube, s
}

func reconcileAndGet(t *testing.T, c *Controller, kube client.Client, name string) *v1.EC2NodeClass {
	t.Helper()
	nc := &v1.EC2NodeClass{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, nc); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reconcile(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	out := &v1.EC2NodeClass{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: name}, out); err != nil {
		return nil
	}
	return out
}

func testClass() *v1.EC2NodeClass {
	return &v1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Generation: 1}, Spec: v1.EC2NodeClassSpec{
		Role: "NodeRole", AMISelectorTerms: []v1.AMISelectorTerm{{Alias: "al2023@latest"}},
	}}
}

func TestReconcileReady(t *testing.T) {
	c, kube, _ := newTestController(t, testClass())
	got := reconcileAndGet(t, c, kube, "default")
	if !cmp.Equal(got.Finalizers, []string{Finalizer}) {
		t.Errorf("finalizers = %v", got.Finalizers)
	}
	if got.Annotations[v1.AnnotationEC2NodeClassHash] != Hash(got) || got.Annotations[v1.AnnotationEC2NodeClassHashVersion] != HashVersion {
		t.Errorf("hash annotations = %v", got.Annotations)
	}
	wantSubnets := []v1.Subnet{{ID: "subnet-a", Zone: "us-east-1a", ZoneID: "use1-az1"}, {ID: "subnet-b", Zone: "us-east-1b", ZoneID: "use1-az2"}}
	if diff := cmp.Diff(wantSubnets, got.Status.Subnets); diff != "" {
		t.Errorf("subnets mismatch (-want +got):\n%s", diff)
	}
	if got.Status.InstanceProfile != "demo_123" || len(got.Status.SecurityGroups) != 1 || len(got.Status.AMIs) != 1 {
		t.Errorf("status = %+v", got.Status)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionTypeReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != got.Generation {
		t.Errorf("Ready = %+v", ready)
	}
}

func TestReconcileNotReady(t *testing.T) {
	nc := testClass()
	nc.Spec.UserData = aws.String("bad")
	c, kube, s := newTestController(t, nc)
	s.subnets = nil
	s.profErr = &instanceprofile.RoleNotFoundError{Role: "NodeRole"}
	got := reconcileAndGet(t, c, kube, "default")
	reasons := map[string]string{}
	for _, cond := range got.Status.Conditions {
		reasons[cond.Type] = string(cond.Status) + "/" + cond.Reason
	}
	want := map[string]string{
		v1.ConditionTypeSubnetsReady: "False/" + ReasonSubnetsNotFound, v1.ConditionTypeSecurityGroupsReady: "True/SecurityGroupsReady",
		v1.ConditionTypeAMIsReady: "True/AMIsReady", v1.ConditionTypeInstanceProfileReady: "False/" + ReasonRoleNotFound,
		v1.ConditionTypeValidationSucceeded: "False/" + ReasonUserDataInvalid, v1.ConditionTypeReady: "False/" + ReasonSubnetsNotFound,
	}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("conditions mismatch (-want +got):\n%s", diff)
	}
	if got.Status.InstanceProfile != "" {
		t.Errorf("instanceProfile = %q, want empty while the role is missing", got.Status.InstanceProfile)
	}
}

func TestFinalize(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim"}}
	claim.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: v1.Group, Kind: "EC2NodeClass", Name: "default"}
	c, kube, s := newTestController(t, testClass(), claim)
	ctx := context.Background()
	reconcileAndGet(t, c, kube, "default")
	nc := &v1.EC2NodeClass{}
	if err := kube.Get(ctx, client.ObjectKey{Name: "default"}, nc); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	// 1. A NodeClaim still refers to the class: wait.
	if got := reconcileAndGet(t, c, kube, "default"); got == nil || len(s.ltDelete) != 0 || len(s.deleted) != 0 {
		t.Fatalf("finalized while a NodeClaim exists: class %v, launch templates %v, profiles %v", got, s.ltDelete, s.deleted)
	}
	// 2. Once it is gone, launch templates and the profile go, then the class.
	if err := kube.Delete(ctx, claim); err != nil {
		t.Fatal(err)
	}
	if got := reconcileAndGet(t, c, kube, "default"); got != nil {
		t.Errorf("class still exists: %+v", got.ObjectMeta)
	}
	if !cmp.Equal(s.ltDelete, []string{"default"}) || !cmp.Equal(s.deleted, []string{"default"}) {
		t.Errorf("launch templates deleted %v, profiles deleted %v", s.ltDelete, s.deleted)
	}
}
