package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/ami"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instanceprofile"
	localeks "github.com/dovetail-autoscaler/dovetail/internal/localaws/eks"
)

func TestVerdicts(t *testing.T) {
	transient := errors.New("throttled")
	_, aliasErr := ami.ParseAlias("spec.amiSelectorTerms[0].alias", "ubuntu@latest")
	cases := map[string]struct {
		got     func() (verdict, error)
		want    verdict
		wantErr bool
	}{
		"subnets found":      {got: func() (verdict, error) { return subnetsVerdict(2, nil) }, want: ok(v1.ConditionTypeSubnetsReady)},
		"subnets none":       {got: func() (verdict, error) { return subnetsVerdict(0, nil) }, want: failed(ReasonSubnetsNotFound, "spec.subnetSelectorTerms matched no subnet")},
		"subnets transient":  {got: func() (verdict, error) { return subnetsVerdict(0, transient) }, wantErr: true},
		"groups none":        {got: func() (verdict, error) { return securityGroupsVerdict(0, nil) }, want: failed(ReasonSecurityGroupsNotFound, "spec.securityGroupSelectorTerms matched no security group")},
		"groups found":       {got: func() (verdict, error) { return securityGroupsVerdict(1, nil) }, want: ok(v1.ConditionTypeSecurityGroupsReady)},
		"amis found":         {got: func() (verdict, error) { return amisVerdict(1, nil) }, want: ok(v1.ConditionTypeAMIsReady)},
		"amis unknown alias": {got: func() (verdict, error) { return amisVerdict(0, fmt.Errorf("wrapped: %w", aliasErr)) }, want: failed(ReasonUnsupportedAlias, "%s", "wrapped: "+aliasErr.Error())},
		"amis transient":     {got: func() (verdict, error) { return amisVerdict(0, transient) }, wantErr: true},
		"role missing": {got: func() (verdict, error) { return instanceProfileVerdict(&instanceprofile.RoleNotFoundError{Role: "r"}) },
			want: failed(ReasonRoleNotFound, `spec.role: IAM role "r" not found`)},
		"profile missing": {got: func() (verdict, error) { return instanceProfileVerdict(&instanceprofile.NotFoundError{Name: "p"}) },
			want: failed(ReasonInstanceProfileNotFound, `spec.instanceProfile: instance profile "p" not found`)},
		"profile ok": {got: func() (verdict, error) { return instanceProfileVerdict(nil) }, want: ok(v1.ConditionTypeInstanceProfileReady)},
		"user data bad": {got: func() (verdict, error) { return validationVerdict("AL2023", errors.New("line 3: bad YAML"), nil) },
			want: failed(ReasonUserDataInvalid, "spec.userData is not valid AL2023 user data: line 3: bad YAML")},
		"no service cidr": {got: func() (verdict, error) {
			return validationVerdict("AL2023", nil, fmt.Errorf("x: %w", ErrNoServiceCIDR))
		},
			want: failed(ReasonClusterCIDRResolutionFailed, "resolving the cluster's service CIDR for AL2023 user data: x: the EKS cluster reports no service CIDR")},
		"cidr transient: reported and retried": {got: func() (verdict, error) { return validationVerdict("AL2023", nil, transient) },
			want: failed(ReasonClusterCIDRResolutionFailed, "resolving the cluster's service CIDR for AL2023 user data: throttled"), wantErr: true},
		"validation ok": {got: func() (verdict, error) { return validationVerdict("AL2023", nil, nil) }, want: ok(v1.ConditionTypeValidationSucceeded)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.got()
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdict mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadyVerdict(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	allTrue := func() []metav1.Condition {
		var out []metav1.Condition
		for _, t := range dependents {
			out = append(out, cond(t, metav1.ConditionTrue, t, ""))
		}
		return out
	}
	withCond := func(c metav1.Condition) []metav1.Condition {
		out := allTrue()
		for i := range out {
			if out[i].Type == c.Type {
				out[i] = c
			}
		}
		return out
	}
	cases := map[string]struct {
		conditions []metav1.Condition
		want       verdict
	}{
		"all true": {conditions: allTrue(), want: ok(ReasonReady)},
		"one false": {conditions: withCond(cond(v1.ConditionTypeAMIsReady, metav1.ConditionFalse, ReasonAMINotFound, "spec.amiSelectorTerms matched no AMI")),
			want: failed(ReasonAMINotFound, "spec.amiSelectorTerms matched no AMI")},
		"two false: first reason, both messages": {
			conditions: append(withCond(cond(v1.ConditionTypeSubnetsReady, metav1.ConditionFalse, ReasonSubnetsNotFound, "no subnet"))[:1],
				cond(v1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, ReasonSecurityGroupsNotFound, "no group"),
				cond(v1.ConditionTypeAMIsReady, metav1.ConditionTrue, "x", ""), cond(v1.ConditionTypeInstanceProfileReady, metav1.ConditionTrue, "x", ""),
				cond(v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "x", "")),
			want: failed(ReasonSubnetsNotFound, "no subnet; no group")},
		"unknown": {conditions: withCond(cond(v1.ConditionTypeSubnetsReady, metav1.ConditionUnknown, ReasonResolutionFailed, "throttled")),
			want: verdict{Status: metav1.ConditionUnknown, Reason: ReasonResolutionFailed, Message: "not resolved yet: SubnetsReady"}},
		"missing counts as unknown": {conditions: allTrue()[1:],
			want: verdict{Status: metav1.ConditionUnknown, Reason: ReasonResolutionFailed, Message: "not resolved yet: SubnetsReady"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, readyVerdict(tc.conditions)); diff != "" {
				t.Errorf("readyVerdict() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHash(t *testing.T) {
	base := &v1.EC2NodeClass{Spec: v1.EC2NodeClassSpec{
		AMIFamily: aws.String(v1.AMIFamilyAL2023), Role: "NodeRole", Tags: map[string]string{"a": "1", "b": "2"},
		SubnetSelectorTerms: []v1.SubnetSelectorTerm{{ID: "subnet-1"}},
	}}
	h := Hash(base)
	cases := map[string]struct {
		change func(*v1.EC2NodeClass)
		same   bool
	}{
		"selector terms are dynamic": {change: func(nc *v1.EC2NodeClass) {
			nc.Spec.SubnetSelectorTerms = []v1.SubnetSelectorTerm{{ID: "subnet-2"}}
			nc.Spec.AMISelectorTerms = []v1.AMISelectorTerm{{Alias: "al2023@latest"}}
		}, same: true},
		"role swaps in place": {change: func(nc *v1.EC2NodeClass) { nc.Spec.Role = "Other" }, same: true},
		"status is ignored":   {change: func(nc *v1.EC2NodeClass) { nc.Status.InstanceProfile = "x" }, same: true},
		"tags":                {change: func(nc *v1.EC2NodeClass) { nc.Spec.Tags["c"] = "3" }},
		"user data":           {change: func(nc *v1.EC2NodeClass) { nc.Spec.UserData = aws.String("#!/bin/sh") }},
		"monitoring":          {change: func(nc *v1.EC2NodeClass) { nc.Spec.DetailedMonitoring = aws.Bool(true) }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := base.DeepCopy()
			tc.change(nc)
			if got := Hash(nc) == h; got != tc.same {
				t.Errorf("hash unchanged = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestClusterCIDRAgainstLocalEKS(t *testing.T) {
	svc := localeks.New(localeks.Config{})
	svc.PutCluster(localeks.Cluster{Name: "demo", ServiceIPv4CIDR: "172.20.0.0/16"})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client := eks.New(eks.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")})
	ctx := context.Background()

	c := NewClusterCIDR(client, "demo")
	if got, err := c.Resolve(ctx); err != nil || got != "172.20.0.0/16" {
		t.Fatalf("Resolve() = %q, %v", got, err)
	}
	svc.DeleteCluster("demo")
	if got, err := c.Resolve(ctx); err != nil || got != "172.20.0.0/16" || c.Get() != got {
		t.Errorf("Resolve() after the first success = %q, %v; want the kept value", got, err)
	}
	if _, err := NewClusterCIDR(client, "missing").Resolve(ctx); err == nil || errors.Is(err, ErrNoServiceCIDR) {
		t.Errorf("Resolve() of an unknown cluster = %v, want a (transient) API error", err)
	}
}
