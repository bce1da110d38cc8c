package instancetype

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
)

// testProvider is a provider over the fake EC2 with a fake clock.
type testProvider struct {
	*Provider
	ec2         *fakeEC2
	prices      *fakePrices
	clock       *clocktesting.FakeClock
	unavailable *unavailable.Cache
}

func newTestProvider(t *testing.T, zones ...string) *testProvider {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	tp := &testProvider{ec2: newFakeEC2(t, zones...), prices: newFakePrices(t), clock: clk, unavailable: unavailable.New(clk)}
	p, err := New(tp.ec2, tp.prices, tp.unavailable, clk, Settings{Region: "us-east-1", VMMemoryOverheadPercent: catalog.DefaultVMMemoryOverheadPercent})
	if err != nil {
		t.Fatal(err)
	}
	tp.Provider = p
	return tp
}

// find returns the named type of a list.
func find(t *testing.T, its []*cloudprovider.InstanceType, name string) *cloudprovider.InstanceType {
	t.Helper()
	i := slices.IndexFunc(its, func(it *cloudprovider.InstanceType) bool { return it.Name == name })
	if i < 0 {
		t.Fatalf("%s not listed", name)
	}
	return its[i]
}

// offeringStrings renders offerings as zone/capacity-type[/unavailable].
func offeringStrings(os []cloudprovider.Offering) []string {
	var out []string
	for _, o := range os {
		s := o.Zone + "/" + o.CapacityType
		if !o.Available {
			s += "/unavailable"
		}
		out = append(out, s)
	}
	return out
}

func TestListOfferings(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a", "us-east-1b", "us-east-1c")
	// t2.micro supports on-demand only.
	for i := range tp.ec2.infos {
		if tp.ec2.infos[i].InstanceType == "t2.micro" {
			tp.ec2.infos[i].SupportedUsageClasses = []ec2types.UsageClassType{ec2types.UsageClassTypeOnDemand}
		}
	}
	// The class's subnets cover zones a and b (twice) and d, which offers nothing.
	nc := nodeClass("default", catalog.AMIFamilyAL2023, "us-east-1b", "us-east-1a")
	nc.Status.Subnets = append(nc.Status.Subnets,
		awsv1.Subnet{ID: "subnet-other", Zone: "us-east-1a", ZoneID: "use1-az2"},
		awsv1.Subnet{ID: "subnet-d", Zone: "us-east-1d", ZoneID: "use1-az9"})
	tp.unavailable.MarkUnavailable("m5.large", "us-east-1a", "spot", "InsufficientInstanceCapacity")
	tp.prices.setSpot("m5.large", "us-east-1b", 0.0123)

	its, err := tp.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	m5 := find(t, its, "m5.large")
	if diff := cmp.Diff([]string{"us-east-1a/on-demand", "us-east-1a/spot/unavailable", "us-east-1b/on-demand", "us-east-1b/spot"}, offeringStrings(m5.Offerings)); diff != "" {
		t.Errorf("m5.large offerings (-want +got):\n%s", diff)
	}
	wantPrices := []float64{0.096, catalog.SpotPrice("m5.large", "us-east-1a", 0.096), 0.096, 0.0123}
	var gotPrices []float64
	for _, o := range m5.Offerings {
		gotPrices = append(gotPrices, o.Price)
	}
	if diff := cmp.Diff(wantPrices, gotPrices); diff != "" {
		t.Errorf("m5.large prices (-want +got):\n%s", diff)
	}
	wantReqs := map[string]string{
		"topology.kubernetes.io/zone":   "topology.kubernetes.io/zone In [us-east-1a us-east-1b]",
		"karpenter.sh/capacity-type":    "karpenter.sh/capacity-type In [on-demand spot]",
		"topology.k8s.aws/zone-id":      "topology.k8s.aws/zone-id In [use1-az1 use1-az2]",
		"topology.kubernetes.io/region": "topology.kubernetes.io/region In [us-east-1]",
	}
	gotReqs := map[string]string{}
	for key := range wantReqs {
		if r, ok := m5.Requirements.Get(key); ok {
			gotReqs[key] = r.String()
		}
	}
	if diff := cmp.Diff(wantReqs, gotReqs); diff != "" {
		t.Errorf("m5.large requirements (-want +got):\n%s", diff)
	}
	t2 := find(t, its, "t2.micro")
	if diff := cmp.Diff([]string{"us-east-1a/on-demand", "us-east-1b/on-demand"}, offeringStrings(t2.Offerings)); diff != "" {
		t.Errorf("t2.micro offerings (-want +got):\n%s", diff)
	}
	// The request filters Karpenter sends, paged by the SDK paginator.
	in := tp.ec2.typeCalls[0]
	if got := aws.ToInt32(in.MaxResults); got != 100 {
		t.Errorf("DescribeInstanceTypes MaxResults = %d, want 100", got)
	}
	var filters []string
	for _, f := range in.Filters {
		filters = append(filters, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	if diff := cmp.Diff([]string{"supported-virtualization-type=hvm", "processor-info.supported-architecture=x86_64,arm64"}, filters); diff != "" {
		t.Errorf("DescribeInstanceTypes filters (-want +got):\n%s", diff)
	}
	if got, want := len(tp.ec2.typeCalls), (documentedTypes+99)/100; got != want {
		t.Errorf("DescribeInstanceTypes pages = %d, want %d", got, want)
	}
	if got := tp.ec2.offeringCalls[0].LocationType; got != ec2types.LocationTypeAvailabilityZone {
		t.Errorf("DescribeInstanceTypeOfferings LocationType = %q", got)
	}
}

func TestListCache(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a")
	nc := nodeClass("default", catalog.AMIFamilyAL2023, "us-east-1a")
	ctx := context.Background()
	first, err := tp.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	same := func(step string, want bool) {
		t.Helper()
		got, err := tp.List(ctx, nc)
		if err != nil {
			t.Fatal(err)
		}
		if isSame := len(got) > 0 && got[0] == first[0]; isSame != want {
			t.Errorf("%s: cached result reused = %v, want %v", step, isSame, want)
		}
		first = got
	}
	same("again", true)
	tp.clock.Step(CacheTTL - time.Second)
	same("just before the TTL", true)
	calls := len(tp.ec2.typeCalls)
	tp.clock.Step(time.Second)
	same("at the TTL", false)
	if len(tp.ec2.typeCalls) == calls {
		t.Error("EC2 data not fetched again after the TTL")
	}
	tp.unavailable.MarkUnavailable("a1.large", "us-east-1a", "spot", "test")
	same("after a mark", false)
	if got := offeringStrings(find(t, first, "a1.large").Offerings); !slices.Contains(got, "us-east-1a/spot/unavailable") {
		t.Errorf("a1.large offerings after a mark = %v", got)
	}
	tp.prices.setSpot("a1.large", "us-east-1a", 0.001)
	same("after a price change", false)
	nc.Generation++
	same("after a spec change", false)
	nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: "s2", Zone: "us-east-1b"})
	same("after a subnet change", false)
	tp.clock.Step(unavailable.TTL)
	same("after the mark expired", false)
	if got := offeringStrings(find(t, first, "a1.large").Offerings); slices.Contains(got, "us-east-1a/spot/unavailable") {
		t.Errorf("a1.large offerings after the mark expired = %v", got)
	}
}

func TestListErrors(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a")
	nc := nodeClass("default", catalog.AMIFamilyAL2023, "us-east-1a")
	ctx := context.Background()
	tp.ec2.err = errors.New("throttled")
	if _, err := tp.List(ctx, nc); err == nil || !strings.Contains(err.Error(), "DescribeInstanceTypes: throttled") {
		t.Errorf("List error = %v, want the DescribeInstanceTypes error", err)
	}
	// With data fetched once, a failed refresh keeps it.
	tp.ec2.err = nil
	if _, err := tp.List(ctx, nc); err != nil {
		t.Fatal(err)
	}
	tp.ec2.err = errors.New("throttled")
	tp.clock.Step(CacheTTL)
	if its, err := tp.List(ctx, nc); err != nil || len(its) == 0 {
		t.Errorf("List after a failed refresh = %d types, %v; want the previous types", len(its), err)
	}
	if err := tp.Refresh(ctx); err == nil {
		t.Error("Refresh succeeded with a failing EC2")
	}
	// Invalid kubelet settings are reported.
	tp.ec2.err = nil
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"memory": "lots"}}
	nc.Generation++
	if _, err := tp.List(ctx, nc); err == nil || !strings.Contains(err.Error(), "Kubelet.KubeReserved[memory]") {
		t.Errorf("List error = %v, want the kubeReserved error", err)
	}
}

func TestAMIFamily(t *testing.T) {
	cases := map[string]struct {
		family *string
		alias  string
		want   catalog.AMIFamily
	}{
		"explicit":             {family: ptr("Bottlerocket"), want: catalog.AMIFamilyBottlerocket},
		"alias":                {alias: "al2@latest", want: catalog.AMIFamilyAL2},
		"windows alias":        {alias: "windows2022@latest", want: catalog.AMIFamilyWindows2022},
		"Custom with an alias": {family: ptr("Custom"), alias: "al2023@v20240625", want: catalog.AMIFamilyCustom},
		// Admission requires amiFamily without an alias; an object that got
		// past it anyway is treated as Custom, which injects nothing.
		"neither":            {want: catalog.AMIFamilyCustom},
		"bottlerocket alias": {alias: "bottlerocket@v1.20.3", want: catalog.AMIFamilyBottlerocket},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: tc.family}}
			if tc.alias != "" {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: tc.alias}}
			}
			if got := AMIFamily(nc); got != tc.want {
				t.Errorf("AMIFamily = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestRootVolumeSize(t *testing.T) {
	bdm := func(device, size string, root bool) *awsv1.BlockDeviceMapping {
		q := resource.MustParse(size)
		return &awsv1.BlockDeviceMapping{DeviceName: ptr(device), EBS: &awsv1.BlockDevice{VolumeSize: &q}, RootVolume: root}
	}
	cases := map[string]struct {
		family catalog.AMIFamily
		bdms   []*awsv1.BlockDeviceMapping
		want   string
	}{
		"no mappings: family default": {family: catalog.AMIFamilyAL2023, want: "<default>"},
		"rootVolume wins":             {family: catalog.AMIFamilyAL2023, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/xvdc", "100Gi", true)}, want: "100Gi"},
		"AL2023 ephemeral device":     {family: catalog.AMIFamilyAL2023, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/xvdc", "9Gi", false), bdm("/dev/xvda", "30Gi", false)}, want: "30Gi"},
		"Bottlerocket data volume":    {family: catalog.AMIFamilyBottlerocket, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "4Gi", false), bdm("/dev/xvdb", "60Gi", false)}, want: "60Gi"},
		"Windows sda1":                {family: catalog.AMIFamilyWindows2022, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/sda1", "80Gi", false)}, want: "80Gi"},
		"no mapping of the device":    {family: catalog.AMIFamilyAL2, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/xvdz", "80Gi", false)}, want: "<default>"},
		"Custom: the last mapping":    {family: catalog.AMIFamilyCustom, bdms: []*awsv1.BlockDeviceMapping{bdm("/dev/xvda", "30Gi", false), bdm("/dev/xvdz", "70Gi", false)}, want: "70Gi"},
		"Custom without mappings":     {family: catalog.AMIFamilyCustom, want: "<default>"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{BlockDeviceMappings: tc.bdms}}
			got := "<default>"
			if q := RootVolumeSize(nc, tc.family); q != nil {
				got = q.String()
			}
			if got != tc.want {
				t.Errorf("RootVolumeSize = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestListNodeClassSettings checks that the class's kubelet, block devices
// and instance-store policy reach capacity and overhead.
func TestListNodeClassSettings(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a")
	nc := nodeClass("custom", catalog.AMIFamilyAL2023, "us-east-1a")
	size := resource.MustParse("100Gi")
	raid0 := awsv1.InstanceStorePolicyRAID0
	nc.Spec.Kubelet = &awsv1.KubeletConfiguration{
		MaxPods: ptr[int32](50), SystemReserved: map[string]string{"cpu": "100m"},
		EvictionHard: map[string]string{"memory.available": "200Mi"}, EvictionSoft: map[string]string{"memory.available": "1Gi"},
	}
	nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{DeviceName: ptr("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: &size}, RootVolume: true}}
	nc.Spec.InstanceStorePolicy = &raid0
	its, err := tp.List(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, name := range []string{"m5.large", "m5d.large"} {
		it := find(t, its, name)
		got[name] = map[string]string{
			"pods":              it.Capacity.Pods().String(),
			"ephemeral-storage": it.Capacity.StorageEphemeral().String(),
			"system-reserved":   shown(it.Overhead.SystemReserved)["cpu"],
			"eviction memory":   shown(it.Overhead.EvictionThreshold)["memory"],
		}
	}
	want := map[string]map[string]string{
		"m5.large":  {"pods": "50", "ephemeral-storage": "100Gi", "system-reserved": "100m", "eviction memory": "1Gi"},
		"m5d.large": {"pods": "50", "ephemeral-storage": "75G", "system-reserved": "100m", "eviction memory": "1Gi"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
}

// TestListConcurrently lists from several goroutines while offerings are
// marked; run it with -race.
func TestListConcurrently(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a", "us-east-1b")
	ctx := context.Background()
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			nc := nodeClass("nc", catalog.AMIFamilyAL2023, "us-east-1a", "us-east-1b")
			for i := range 5 {
				if g%2 == 0 {
					tp.unavailable.MarkUnavailable("m5.large", "us-east-1a", "spot", "test")
				}
				if _, err := tp.List(ctx, nc); err != nil {
					done <- err
					return
				}
				_ = i
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// TestListKeepsTypesTheClassAMIsSuit: a class offers only the types one of
// its resolved AMIs suits (its architecture here); the filtered list is
// cached with the rest, and follows the AMIs when they change.
func TestListKeepsTypesTheClassAMIsSuit(t *testing.T) {
	tp := newTestProvider(t, "us-east-1a")
	nc := nodeClass("arch", catalog.AMIFamilyAL2023, "us-east-1a")
	arch := func(a string) awsv1.AMI {
		return awsv1.AMI{ID: "ami-" + a, Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}}
	}
	onlyArch := func(its []*cloudprovider.InstanceType, want string) {
		t.Helper()
		if len(its) == 0 {
			t.Fatal("no types offered")
		}
		for _, it := range its {
			if r, _ := it.Requirements.Get(corev1.LabelArchStable); !r.Has(want) || r.Len() != 1 {
				t.Fatalf("%s (%s) offered with only %s AMIs", it.Name, r, want)
			}
		}
	}
	ctx := context.Background()
	nc.Status.AMIs = []awsv1.AMI{arch("amd64")}
	first, err := tp.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	onlyArch(first, "amd64")
	again, err := tp.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != len(again) || &first[0] != &again[0] {
		t.Error("the same class and AMIs were filtered again instead of read from the cache")
	}
	nc.Status.AMIs = []awsv1.AMI{arch("arm64")}
	arm, err := tp.List(ctx, nc)
	if err != nil {
		t.Fatal(err)
	}
	onlyArch(arm, "arm64")
}
