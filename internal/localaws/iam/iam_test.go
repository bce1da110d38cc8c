package iam

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"
)

var start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newClient(t *testing.T, s *Service, creds aws.CredentialsProvider, region string) *iam.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return iam.New(iam.Options{Region: region, BaseEndpoint: aws.String(srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}})
}

func static() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
}

var ignore = cmpopts.IgnoreUnexported(types.InstanceProfile{}, types.Role{}, types.Tag{})

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	if err != nil {
		return "non-API error: " + err.Error()
	}
	return ""
}

// TestKarpenterLifecycle walks the calls Karpenter makes for a nodeclass's
// role: Get (absent), Create, Tag, Add role, swap role, Remove, Delete.
func TestKarpenterLifecycle(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(start)
	s := New(Config{Clock: clk})
	nodeRole := s.AddRole("KarpenterNodeRole", "/")
	other := s.AddRole("Other", "/team/")
	c := newClient(t, s, static(), "us-east-1")
	const name = "dovetail_123456789"
	const path = "/karpenter/us-east-1/dovetail/uid-1/"

	_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var nse *types.NoSuchEntityException
	if !errors.As(err, &nse) {
		t.Fatalf("GetInstanceProfile before create: %v, want NoSuchEntityException", err)
	}
	created, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(path),
		Tags: []types.Tag{{Key: aws.String("kubernetes.io/cluster/dovetail"), Value: aws.String("owned")}, {Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("default")}}})
	if err != nil {
		t.Fatalf("CreateInstanceProfile: %v", err)
	}
	_, err = c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("DOVETAIL_123456789")})
	var exists *types.EntityAlreadyExistsException
	if !errors.As(err, &exists) {
		t.Fatalf("second CreateInstanceProfile: %v, want EntityAlreadyExistsException", err)
	}
	if _, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name),
		Tags: []types.Tag{{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("renamed")}, {Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatalf("TagInstanceProfile: %v", err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("Other")}); err != nil {
		t.Fatalf("AddRoleToInstanceProfile: %v", err)
	}
	_, err = c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("KarpenterNodeRole")})
	var limit *types.LimitExceededException
	if !errors.As(err, &limit) {
		t.Fatalf("second role: %v, want LimitExceededException", err)
	}
	_, err = c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)})
	var conflict *types.DeleteConflictException
	if !errors.As(err, &conflict) {
		t.Fatalf("delete with role: %v, want DeleteConflictException", err)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("Other")}); err != nil {
		t.Fatalf("RemoveRoleFromInstanceProfile: %v", err)
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("KarpenterNodeRole")}); err != nil {
		t.Fatalf("AddRoleToInstanceProfile: %v", err)
	}
	got, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		t.Fatalf("GetInstanceProfile: %v", err)
	}
	want := types.InstanceProfile{
		InstanceProfileName: aws.String(name), Path: aws.String(path), InstanceProfileId: created.InstanceProfile.InstanceProfileId,
		Arn: aws.String("arn:aws:iam::123456789012:instance-profile" + path + name), CreateDate: aws.Time(start),
		Roles: []types.Role{{RoleName: aws.String("KarpenterNodeRole"), Path: aws.String("/"), RoleId: aws.String(nodeRole.ID),
			Arn: aws.String("arn:aws:iam::123456789012:role/KarpenterNodeRole"), CreateDate: aws.Time(start)}},
		Tags: []types.Tag{{Key: aws.String("kubernetes.io/cluster/dovetail"), Value: aws.String("owned")},
			{Key: aws.String("karpenter.k8s.aws/ec2nodeclass"), Value: aws.String("renamed")}, {Key: aws.String("team"), Value: aws.String("a")}},
	}
	if diff := cmp.Diff(want, *got.InstanceProfile, ignore); diff != "" {
		t.Errorf("GetInstanceProfile (-want +got):\n%s", diff)
	}
	role, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("Other")})
	if err != nil || aws.ToString(role.Role.Arn) != other.ARN || other.ARN != "arn:aws:iam::123456789012:role/team/Other" {
		t.Fatalf("GetRole = %+v, %v; want %s", role, err, other.ARN)
	}
	if _, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: aws.String("KarpenterNodeRole")}); err != nil {
		t.Fatalf("RemoveRoleFromInstanceProfile: %v", err)
	}
	if _, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		t.Fatalf("DeleteInstanceProfile: %v", err)
	}
	if left := s.InstanceProfiles(); len(left) != 0 {
		t.Fatalf("instance profiles leaked: %+v", left)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s := New(Config{})
	s.AddRole("r", "")
	c := newClient(t, s, static(), "us-east-1")
	if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	manyTags := make([]types.Tag, 51)
	for i := range manyTags {
		manyTags[i] = types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")}
	}
	cases := map[string]struct {
		call func(*iam.Client) error
		want string
	}{
		"get unknown profile": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String("nope")})
			return err
		}},
		"bad name": {want: "ValidationError", call: func(c *iam.Client) error {
			_, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("has space")})
			return err
		}},
		"bad path": {want: "ValidationError", call: func(c *iam.Client) error {
			_, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("q"), Path: aws.String("/no-trailing-slash")})
			return err
		}},
		"too many tags": {want: "LimitExceeded", call: func(c *iam.Client) error {
			_, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String("q"), Tags: manyTags})
			return err
		}},
		"duplicate tag keys": {want: "InvalidInput", call: func(c *iam.Client) error {
			_, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("p"),
				Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("A"), Value: aws.String("2")}}})
			return err
		}},
		"tag unknown profile": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String("nope"), Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}})
			return err
		}},
		"add unknown role": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("ghost")})
			return err
		}},
		"remove role not held": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String("p"), RoleName: aws.String("r")})
			return err
		}},
		"delete unknown": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String("nope")})
			return err
		}},
		"get unknown role": {want: "NoSuchEntity", call: func(c *iam.Client) error {
			_, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("ghost")})
			return err
		}},
		"bad max items": {want: "ValidationError", call: func(c *iam.Client) error {
			_, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{MaxItems: aws.Int32(1001)})
			return err
		}},
		"bad marker": {want: "ValidationError", call: func(c *iam.Client) error {
			_, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{Marker: aws.String("!!")})
			return err
		}},
		"unknown action": {want: "InvalidAction", call: func(c *iam.Client) error {
			_, err := c.ListRoles(ctx, &iam.ListRolesInput{})
			return err
		}},
		"unsigned": {want: "MissingAuthenticationToken", call: func(*iam.Client) error {
			_, err := newClient(t, s, aws.AnonymousCredentials{}, "us-east-1").GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("r")})
			return err
		}},
		"wrong region": {want: "SignatureDoesNotMatch", call: func(*iam.Client) error {
			_, err := newClient(t, s, static(), "eu-west-1").GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("r")})
			return err
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := code(tc.call(c)); got != tc.want {
				t.Fatalf("error code = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestListInstanceProfilesPaginates(t *testing.T) {
	ctx := context.Background()
	s := New(Config{})
	s.AddRole("r", "/")
	c := newClient(t, s, static(), "us-east-1")
	var want []string
	for i := 0; i < 7; i++ {
		name := fmt.Sprintf("p%d", i)
		path := "/karpenter/us-east-1/dovetail/"
		if i%3 == 0 {
			path = "/other/"
		} else {
			want = append(want, name)
		}
		if _, err := c.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(path),
			Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: aws.String("p1"), RoleName: aws.String("r")}); err != nil {
		t.Fatal(err)
	}
	pager := iam.NewListInstanceProfilesPaginator(c, &iam.ListInstanceProfilesInput{PathPrefix: aws.String("/karpenter/"), MaxItems: aws.Int32(2)})
	var got []string
	pages := 0
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("NextPage: %v", err)
		}
		pages++
		for _, p := range page.InstanceProfiles {
			got = append(got, *p.InstanceProfileName)
			if p.Tags != nil {
				t.Errorf("%s: listing returned tags %v", *p.InstanceProfileName, p.Tags)
			}
			if *p.InstanceProfileName == "p1" && (len(p.Roles) != 1 || *p.Roles[0].RoleName != "r") {
				t.Errorf("p1 roles = %+v", p.Roles)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	if pages != 2 {
		t.Errorf("pages = %d, want 2", pages)
	}
	all, err := c.ListInstanceProfiles(ctx, &iam.ListInstanceProfilesInput{})
	if err != nil || len(all.InstanceProfiles) != 7 || all.IsTruncated {
		t.Fatalf("ListInstanceProfiles() = %d profiles, truncated %v, %v", len(all.InstanceProfiles), all.IsTruncated, err)
	}
}
