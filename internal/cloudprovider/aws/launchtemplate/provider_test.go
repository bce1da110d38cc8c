package launchtemplate

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	testclock "k8s.io/utils/clock/testing"

	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// newLocalProvider returns a Provider for cluster "demo" talking through the
// SDK to a local EC2 endpoint on a fake clock.
func newLocalProvider(t *testing.T) (*Provider, *ec2.Client, *localec2.Service, *testclock.FakeClock) {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	svc := localec2.New(localec2.Config{Clock: clk, Seed: 1})
	srv := httptest.NewServer(svc)
	t.Cleanup(srv.Close)
	client := ec2.New(ec2.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", ""),
	})
	return NewProvider(client, clk, "demo"), client, svc, clk
}

func template(name, cluster string) Template {
	return Template{
		Name: NamePrefix + name, ImageID: "ami-0123456789abcdef0",
		Tags: map[string]string{tagEKSCluster: cluster, tagNodeClass: "default"},
		Data: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
	}
}

func templateNames(svc *localec2.Service) []string {
	var names []string
	for _, lt := range svc.LaunchTemplates() {
		names = append(names, lt.Name)
	}
	slices.Sort(names)
	return names
}

// TestDeleteUnused: a template of the cluster that no launch of this process
// used for UnusedTTL is deleted; one in use is kept; one this process has
// only just seen (made by an earlier leader) gets the whole TTL; another
// cluster's templates are never touched.
func TestDeleteUnused(t *testing.T) {
	p, client, svc, clk := newLocalProvider(t)
	ctx := context.Background()
	used, idle := template("used", "demo"), template("idle", "demo")
	if err := p.Ensure(ctx, []Template{used, idle}); err != nil {
		t.Fatal(err)
	}
	// Another cluster's template, and one an earlier leader made.
	other := NewProvider(client, clk, "other")
	if err := other.Ensure(ctx, []Template{template("theirs", "other")}); err != nil {
		t.Fatal(err)
	}
	earlier := NewProvider(client, clk, "demo")
	if err := earlier.Ensure(ctx, []Template{template("earlier", "demo")}); err != nil {
		t.Fatal(err)
	}
	all := []string{NamePrefix + "earlier", NamePrefix + "idle", NamePrefix + "theirs", NamePrefix + "used"}

	// 1. Within the TTL nothing goes.
	clk.Step(UnusedTTL / 2)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	if got := templateNames(svc); !slices.Equal(got, all) {
		t.Fatalf("templates after DeleteUnused within the TTL = %v, want %v", got, all)
	}
	// 2. "used" is used again; after the TTL "idle" goes, "used" stays, and
	//    "earlier", first seen at step 1, still has time.
	if err := p.Ensure(ctx, []Template{used}); err != nil {
		t.Fatal(err)
	}
	clk.Step(UnusedTTL / 2)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	want := []string{NamePrefix + "earlier", NamePrefix + "theirs", NamePrefix + "used"}
	if got := templateNames(svc); !slices.Equal(got, want) {
		t.Fatalf("templates after the TTL = %v, want %v", got, want)
	}
	// 3. A TTL after it was first seen, "earlier" goes too ("used" is used
	//    once more); a template that is gone already is no error.
	if err := p.Ensure(ctx, []Template{used}); err != nil {
		t.Fatal(err)
	}
	clk.Step(UnusedTTL / 2)
	if err := p.DeleteUnused(ctx); err != nil {
		t.Fatal(err)
	}
	want = []string{NamePrefix + "theirs", NamePrefix + "used"}
	if got := templateNames(svc); !slices.Equal(got, want) {
		t.Fatalf("templates a TTL after first seen = %v, want %v", got, want)
	}
	if err := p.delete(ctx, NamePrefix+"idle"); err != nil {
		t.Errorf("deleting a template that is gone: %v", err)
	}
	// 4. A deleted template that a launch needs again is recreated.
	if err := p.Ensure(ctx, []Template{idle}); err != nil {
		t.Fatal(err)
	}
	if got := templateNames(svc); !slices.Contains(got, NamePrefix+"idle") {
		t.Errorf("templates after Ensure of a deleted one = %v, want it recreated", got)
	}
}
