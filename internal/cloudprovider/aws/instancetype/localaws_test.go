package instancetype

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/pricing"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
	localec2 "github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	localpricing "github.com/dovetail-autoscaler/dovetail/internal/localaws/pricing"
)

// TestAgainstLocalAWS lists instance types through the real SDK clients
// against the local EC2 and Price List endpoints, which serve the catalog:
// capacity, allocatable and every offering's price must equal catalog.Load's.
func TestAgainstLocalAWS(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	ec2svc := localec2.New(localec2.Config{Clock: clk, Seed: 1})
	pricesvc, err := localpricing.New(localpricing.Config{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ec2srv, pricesrv := httptest.NewServer(ec2svc), httptest.NewServer(pricesvc)
	t.Cleanup(ec2srv.Close)
	t.Cleanup(pricesrv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDLOCAL", "secret", "")
	httpClient := &http.Client{Transport: awsclient.BufferRequestBodies(nil)}
	ec2client := ec2.New(ec2.Options{Region: "us-east-1", BaseEndpoint: aws.String(ec2srv.URL), Credentials: creds, Retryer: aws.NopRetryer{}, HTTPClient: httpClient})
	priceclient := awspricing.New(awspricing.Options{Region: "us-east-1", BaseEndpoint: aws.String(pricesrv.URL), Credentials: creds, Retryer: aws.NopRetryer{}, HTTPClient: httpClient})

	ctx := context.Background()
	prices, err := pricing.New(priceclient, ec2client, clk, pricing.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := prices.Refresh(ctx); err != nil {
		t.Fatalf("refreshing prices from the local endpoints: %v", err)
	}
	st := prices.Status()
	if st.OnDemandUpdated.IsZero() || st.SpotUpdated.IsZero() || st.SkippedEntries != 0 {
		t.Errorf("pricing status %+v, want both refreshed and nothing skipped", st)
	}
	p, err := New(ec2client, prices, unavailable.New(clk), clk, Settings{Region: "us-east-1", VMMemoryOverheadPercent: catalog.DefaultVMMemoryOverheadPercent})
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	got, err := p.List(ctx, nodeClass("local", catalog.AMIFamilyAL2023, zones...))
	if err != nil {
		t.Fatal(err)
	}
	want, err := catalog.Load(catalog.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Capacity, Allocatable map[string]string
		Offerings             map[string]float64
	}
	keys := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}
	wantAll, gotAll := map[string]summary{}, map[string]summary{}
	for _, w := range want {
		if len(w.Offerings) == 0 {
			continue
		}
		s := summary{Capacity: pick(w.Capacity, keys), Allocatable: pick(w.Allocatable, keys), Offerings: map[string]float64{}}
		for _, o := range w.Offerings {
			s.Offerings[o.Zone+"/"+o.CapacityType] = o.Price
		}
		wantAll[w.Name] = s
	}
	for _, g := range got {
		s := summary{Capacity: pick(g.Capacity, keys), Allocatable: pick(g.Allocatable(), keys), Offerings: map[string]float64{}}
		for _, o := range g.Offerings {
			s.Offerings[o.Zone+"/"+o.CapacityType] = o.Price
		}
		gotAll[g.Name] = s
	}
	if diff := cmp.Diff(wantAll, gotAll); diff != "" {
		t.Errorf("instance types from the local endpoints (-catalog +provider):\n%s", diff)
	}
	t.Logf("%d types from the local endpoints, %d from the catalog", len(gotAll), len(wantAll))
}
