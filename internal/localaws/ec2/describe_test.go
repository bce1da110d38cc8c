package ec2

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
)

func TestAuthAndProtocolErrors(t *testing.T) {
	e := newEnv(t, 1)
	tests := []struct {
		name       string
		form       url.Values
		signed     bool
		wantStatus int
		wantCode   string
	}{
		{"unsigned", url.Values{"Action": {"DescribeSubnets"}, "Version": {APIVersion}}, false, 403, "MissingAuthenticationToken"},
		{"unknown action", url.Values{"Action": {"RunWizard"}, "Version": {APIVersion}}, true, 400, "InvalidAction"},
		{"missing action", url.Values{"Version": {APIVersion}}, true, 400, "MissingAction"},
		{"missing parameter", url.Values{"Action": {"CreateLaunchTemplate"}, "Version": {APIVersion}}, true, 400, "MissingParameter"},
		{"malformed value", url.Values{"Action": {"DescribeSubnets"}, "MaxResults": {"ten"}}, true, 400, "InvalidParameterValue"},
		{"dry run", url.Values{"Action": {"DescribeSubnets"}, "DryRun": {"true"}}, true, 412, "DryRunOperation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := e.raw(t, tt.form, tt.signed)
			if status != tt.wantStatus || !strings.Contains(body, "<Code>"+tt.wantCode+"</Code>") || !strings.Contains(body, "<RequestID>") {
				t.Errorf("got %d %s, want %d %s", status, body, tt.wantStatus, tt.wantCode)
			}
		})
	}
	status, body := e.raw(t, url.Values{"Action": {"DescribeSubnets"}, "Version": {APIVersion}}, true)
	if status != 200 || !strings.Contains(body, `<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>`) {
		t.Errorf("signed DescribeSubnets: %d %s", status, body)
	}
	// Missing parameters name the parameter.
	_, body = e.raw(t, url.Values{"Action": {"CreateLaunchTemplate"}}, true)
	if !strings.Contains(body, "LaunchTemplateName") {
		t.Errorf("MissingParameter does not name LaunchTemplateName: %s", body)
	}
}

func TestDescribeSubnets(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	ids := func(out []ec2types.Subnet) []string {
		var r []string
		for _, s := range out {
			r = append(r, aws.ToString(s.SubnetId))
		}
		return r
	}
	all := []string{e.subnets[0].ID, e.subnets[1].ID, e.subnets[2].ID}
	tests := []struct {
		name     string
		in       ec2.DescribeSubnetsInput
		want     []string
		wantCode string
	}{
		{"all", ec2.DescribeSubnetsInput{}, all, ""},
		{"subnet-id filter", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("subnet-id", all[0], all[2])}}, []string{all[0], all[2]}, ""},
		{"tag", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("tag:Name", "private-us-east-1b")}}, []string{all[1]}, ""},
		{"tag wildcard", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("tag:Name", "private-*-1?")}}, all, ""},
		{"tag-key", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("tag-key", "karpenter.sh/discovery")}}, all, ""},
		{"tag-key absent", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("tag-key", "nope")}}, nil, ""},
		{"filters are ANDed", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("tag-key", "Name"), flt("availability-zone", "us-east-1c")}}, []string{all[2]}, ""},
		{"zone id", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("availability-zone-id", "use1-az1")}}, []string{all[0]}, ""},
		{"by id", ec2.DescribeSubnetsInput{SubnetIds: []string{all[1]}}, []string{all[1]}, ""},
		{"unknown id", ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-00000000000000000"}}, nil, "InvalidSubnetID.NotFound"},
		{"unknown filter", ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{flt("colour", "blue")}}, nil, "InvalidParameterValue"},
		{"MaxResults too small", ec2.DescribeSubnetsInput{MaxResults: aws.Int32(4)}, nil, "InvalidParameterValue"},
		{"MaxResults too large", ec2.DescribeSubnetsInput{MaxResults: aws.Int32(1001)}, nil, "InvalidParameterValue"},
		{"bad NextToken", ec2.DescribeSubnetsInput{NextToken: aws.String("bogus")}, nil, "InvalidNextToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.client.DescribeSubnets(ctx, &tt.in)
			if got := code(t, err); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, ids(out.Subnets)); diff != "" {
					t.Errorf("subnets (-want +got):\n%s", diff)
				}
			}
		})
	}
	out, err := e.client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{all[0]}})
	must(t, err)
	s := out.Subnets[0]
	got := fmt.Sprint(aws.ToString(s.AvailabilityZone), aws.ToString(s.AvailabilityZoneId), aws.ToString(s.CidrBlock), aws.ToInt32(s.AvailableIpAddressCount), aws.ToString(s.VpcId), len(s.Tags))
	if want := fmt.Sprint("us-east-1a", "use1-az1", "10.0.1.0/24", 251, e.vpc.ID, 2); got != want {
		t.Errorf("subnet %s, want %s", got, want)
	}
}

func TestPaginationWithSDKPaginator(t *testing.T) {
	e := newEnv(t, 1)
	for i := range 9 {
		_, err := e.svc.AddSubnet(Subnet{VPCID: e.vpc.ID, Zone: "us-east-1a", CIDR: fmt.Sprintf("10.0.%d.0/24", 100+i)})
		must(t, err)
	}
	var pages, n int
	p := ec2.NewDescribeSubnetsPaginator(e.client, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		must(t, err)
		pages++
		n += len(out.Subnets)
	}
	if pages != 3 || n != 12 {
		t.Errorf("got %d subnets in %d pages, want 12 in 3", n, pages)
	}
	// A token of one action is refused by another.
	out, err := e.client.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5)})
	must(t, err)
	_, err = e.client.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{NextToken: out.NextToken})
	if got := code(t, err); got != "InvalidNextToken" {
		t.Errorf("foreign token: %q, want InvalidNextToken", got)
	}
}

func TestDescribeSecurityGroups(t *testing.T) {
	e := newEnv(t, 1)
	nodes, control := e.groups[0].ID, e.groups[1].ID
	tests := []struct {
		name     string
		in       ec2.DescribeSecurityGroupsInput
		want     []string
		wantCode string
	}{
		{"all", ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(500)}, []string{nodes, control}, ""},
		{"group-id", ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{flt("group-id", control)}}, []string{control}, ""},
		{"group-name", ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{flt("group-name", "nod*")}}, []string{nodes}, ""},
		{"tag", ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{flt("tag:karpenter.sh/discovery", "demo-control")}}, []string{control}, ""},
		{"GroupIds", ec2.DescribeSecurityGroupsInput{GroupIds: []string{nodes}}, []string{nodes}, ""},
		{"GroupNames", ec2.DescribeSecurityGroupsInput{GroupNames: []string{"control"}}, []string{control}, ""},
		{"unknown id", ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-00000000000000000"}}, nil, "InvalidGroup.NotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.client.DescribeSecurityGroups(context.Background(), &tt.in)
			if got := code(t, err); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
			var got []string
			if err == nil {
				for _, g := range out.SecurityGroups {
					got = append(got, aws.ToString(g.GroupId))
					if aws.ToString(g.GroupName) == "" || aws.ToString(g.VpcId) != e.vpc.ID {
						t.Errorf("group %+v lacks name or vpc", g)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDescribeImages(t *testing.T) {
	e := newEnv(t, 1)
	x86, arm, custom := e.images[0].ID, e.images[1].ID, e.images[2].ID
	old, err := e.svc.AddImage(Image{Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20240101", OwnerAlias: "amazon", OwnerID: "137112412989", Public: true,
		CreationDate: epoch.Add(-300 * 24 * time.Hour), DeprecationTime: epoch.Add(-24 * time.Hour)})
	must(t, err)
	tests := []struct {
		name     string
		in       ec2.DescribeImagesInput
		want     []string
		wantCode string
	}{
		{"all visible, deprecated left out", ec2.DescribeImagesInput{}, []string{x86, arm, custom}, ""},
		{"IncludeDeprecated", ec2.DescribeImagesInput{IncludeDeprecated: aws.Bool(true)}, []string{x86, arm, custom, old.ID}, ""},
		{"by id includes deprecated", ec2.DescribeImagesInput{ImageIds: []string{old.ID}}, []string{old.ID}, ""},
		{"name wildcard", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("name", "amazon-eks-node-al2023-*-standard-1.33-*")}}, []string{x86, arm}, ""},
		{"name ? wildcard", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("name", "my-custom-am?")}}, []string{custom}, ""},
		{"architecture", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("architecture", "arm64")}}, []string{arm}, ""},
		{"state", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("state", "available"), flt("image-id", x86, custom)}}, []string{x86, custom}, ""},
		{"tag", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("tag:team", "infra")}}, []string{custom}, ""},
		{"owners self", ec2.DescribeImagesInput{Owners: []string{"self"}}, []string{custom}, ""},
		{"owners amazon", ec2.DescribeImagesInput{Owners: []string{"amazon"}, IncludeDeprecated: aws.Bool(true), MaxResults: aws.Int32(1000)}, []string{x86, arm, old.ID}, ""},
		{"owners self,amazon with name", ec2.DescribeImagesInput{Owners: []string{"self", "amazon"}, Filters: []ec2types.Filter{flt("name", "*custom*")}}, []string{custom}, ""},
		{"owner account", ec2.DescribeImagesInput{Owners: []string{"137112412989"}}, []string{x86, arm}, ""},
		{"unknown id", ec2.DescribeImagesInput{ImageIds: []string{"ami-00000000000000000"}}, nil, "InvalidAMIID.NotFound"},
		{"malformed id", ec2.DescribeImagesInput{ImageIds: []string{"image-1"}}, nil, "InvalidAMIID.Malformed"},
		{"unknown filter", ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("flavour", "x")}}, nil, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.client.DescribeImages(context.Background(), &tt.in)
			if got := code(t, err); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
			var got []string
			if err == nil {
				for _, img := range out.Images {
					got = append(got, aws.ToString(img.ImageId))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
	out, err := e.client.DescribeImages(context.Background(), &ec2.DescribeImagesInput{ImageIds: []string{old.ID}})
	must(t, err)
	img := out.Images[0]
	got := fmt.Sprint(aws.ToString(img.Name), img.Architecture, aws.ToString(img.CreationDate), aws.ToString(img.DeprecationTime), img.State, aws.ToString(img.OwnerId))
	want := fmt.Sprint(old.Name, "x86_64", "2024-08-05T12:00:00.000Z", "2025-05-31T12:00:00.000Z", "available", "137112412989")
	if got != want {
		t.Errorf("image %s, want %s", got, want)
	}
	// PublishImage at run time: the new image is the newest by the clock.
	e.clk.Step(time.Hour)
	pub, err := e.svc.PublishImage(Image{Name: "amazon-eks-node-al2023-x86_64-standard-1.33-v20250601", OwnerAlias: "amazon", OwnerID: "137112412989", Public: true})
	must(t, err)
	out, err = e.client.DescribeImages(context.Background(), &ec2.DescribeImagesInput{Filters: []ec2types.Filter{flt("name", "*v20250601")}})
	must(t, err)
	if len(out.Images) != 1 || aws.ToString(out.Images[0].ImageId) != pub.ID || aws.ToString(out.Images[0].CreationDate) != "2025-06-01T13:00:00.000Z" {
		t.Errorf("published image: %+v", out.Images)
	}
}

// TestDescribeInstanceTypesAgreesWithCatalog recomputes Karpenter's
// capacity formulas from every DescribeInstanceTypes
// item and checks that they give the catalog's values.
func TestDescribeInstanceTypesAgreesWithCatalog(t *testing.T) {
	e := newEnv(t, 1)
	cat, err := catalog.Load(catalog.DefaultOptions())
	must(t, err)
	want := map[string]catalog.InstanceType{}
	for _, it := range cat {
		want[it.Name] = it
	}
	p := ec2.NewDescribeInstanceTypesPaginator(e.client, &ec2.DescribeInstanceTypesInput{
		MaxResults: aws.Int32(100),
		Filters:    []ec2types.Filter{flt("supported-virtualization-type", "hvm"), flt("processor-info.supported-architecture", "x86_64", "arm64")},
	})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		must(t, err)
		for _, it := range out.InstanceTypes {
			n++
			name := string(it.InstanceType)
			w, ok := want[name]
			if !ok {
				t.Errorf("%s is not in the catalog", name)
				continue
			}
			nc := it.NetworkInfo.NetworkCards[aws.ToInt32(it.NetworkInfo.DefaultNetworkCardIndex)]
			pods := int64(aws.ToInt32(nc.MaximumNetworkInterfaces))*int64(aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface)-1) + 2
			arch := map[ec2types.ArchitectureType]string{"x86_64": "amd64", "arm64": "arm64"}[it.ProcessorInfo.SupportedArchitectures[0]]
			mem := aws.ToInt64(it.MemoryInfo.SizeInMiB)
			if arch == "arm64" {
				mem -= 64
			}
			mem -= int64(mathCeil(float64(mem) * 0.075))
			got := []string{strconv.FormatInt(int64(aws.ToInt32(it.VCpuInfo.DefaultVCpus)), 10), strconv.FormatInt(mem, 10) + "Mi", strconv.FormatInt(pods, 10), arch}
			wantMem := w.Capacity.Memory().Value() / (1 << 20)
			exp := []string{w.Capacity.Cpu().String(), strconv.FormatInt(wantMem, 10) + "Mi", w.Capacity.Pods().String(), w.Labels["kubernetes.io/arch"]}
			if diff := cmp.Diff(exp, got); diff != "" {
				t.Errorf("%s cpu/memory/pods/arch (-catalog +endpoint):\n%s", name, diff)
			}
			if gpu := w.Labels["karpenter.k8s.aws/instance-gpu-count"]; gpu != "" {
				if it.GpuInfo == nil || strconv.Itoa(int(aws.ToInt32(it.GpuInfo.Gpus[0].Count))) != gpu {
					t.Errorf("%s gpu count, want %s", name, gpu)
				}
			}
			if mhz := w.Labels["karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"]; mhz != "" && mhz != "0" {
				if got := strconv.Itoa(int(mathRound(aws.ToFloat64(it.ProcessorInfo.SustainedClockSpeedInGhz) * 1000))); got != mhz {
					t.Errorf("%s clock %s MHz, want %s", name, got, mhz)
				}
			}
			if nvme := w.Labels["karpenter.k8s.aws/instance-local-nvme"]; nvme != "" {
				if it.InstanceStorageInfo == nil || strconv.FormatInt(aws.ToInt64(it.InstanceStorageInfo.TotalSizeInGB), 10) != nvme {
					t.Errorf("%s local nvme, want %s", name, nvme)
				}
			}
			if efa := w.Capacity.Name("vpc.amazonaws.com/efa", "").Value(); efa > 0 {
				if it.NetworkInfo.EfaInfo == nil || int64(aws.ToInt32(it.NetworkInfo.EfaInfo.MaximumEfaInterfaces)) != efa {
					t.Errorf("%s efa, want %d", name, efa)
				}
			}
			if neuron := w.Capacity.Name("aws.amazon.com/neuron", "").Value(); neuron > 0 {
				if it.NeuronInfo == nil || int64(aws.ToInt32(it.NeuronInfo.NeuronDevices[0].Count)) != neuron {
					t.Errorf("%s neuron, want %d", name, neuron)
				}
			}
			if m := w.Labels["karpenter.k8s.aws/instance-cpu-manufacturer"]; strings.ToLower(aws.ToString(it.ProcessorInfo.Manufacturer)) != m {
				t.Errorf("%s manufacturer %s, want %s", name, aws.ToString(it.ProcessorInfo.Manufacturer), m)
			}
		}
	}
	if n != len(cat) {
		t.Errorf("described %d types, catalog has %d", n, len(cat))
	}
}

func TestDescribeInstanceTypesFiltersAndErrors(t *testing.T) {
	e := newEnv(t, 1)
	tests := []struct {
		name     string
		in       ec2.DescribeInstanceTypesInput
		want     []string
		wantCode string
	}{
		{"by name", ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large", "c6g.large"}}, []string{"m5.large", "c6g.large"}, ""},
		{"instance-type wildcard and arch", ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{flt("instance-type", "m6g.*large"), flt("processor-info.supported-architecture", "arm64")}}, []string{"m6g.12xlarge", "m6g.16xlarge", "m6g.2xlarge", "m6g.4xlarge", "m6g.8xlarge", "m6g.large", "m6g.xlarge"}, ""},
		{"unknown type", ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}}, nil, "InvalidInstanceType"},
		{"MaxResults above 100", ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(101)}, nil, "InvalidParameterValue"},
		{"unknown filter", ec2.DescribeInstanceTypesInput{Filters: []ec2types.Filter{flt("tag:x", "y")}}, nil, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.client.DescribeInstanceTypes(context.Background(), &tt.in)
			if got := code(t, err); got != tt.wantCode {
				t.Fatalf("code %q, want %q (%v)", got, tt.wantCode, err)
			}
			var got []string
			if err == nil {
				for _, it := range out.InstanceTypes {
					got = append(got, string(it.InstanceType))
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("types (-want +got):\n%s", diff)
			}
		})
	}
	out, err := e.client.DescribeInstanceTypes(context.Background(), &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}})
	must(t, err)
	it := out.InstanceTypes[0]
	got := fmt.Sprintln(aws.ToInt32(it.VCpuInfo.DefaultVCpus), aws.ToInt64(it.MemoryInfo.SizeInMiB), it.Hypervisor, aws.ToBool(it.BareMetal), it.SupportedUsageClasses,
		aws.ToInt32(it.NetworkInfo.MaximumNetworkInterfaces), aws.ToInt32(it.NetworkInfo.Ipv4AddressesPerInterface), it.EbsInfo.EbsOptimizedSupport)
	if want := "2 8192 nitro false [on-demand spot] 3 10 default\n"; got != want {
		t.Errorf("m5.large: %s, want %s", got, want)
	}
}

func TestOfferingsAndSpotPrices(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	out, err := e.client.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone,
		Filters:      []ec2types.Filter{flt("instance-type", "m5.large"), flt("location", "us-east-1a", "us-east-1c")},
	})
	must(t, err)
	var got []string
	for _, o := range out.InstanceTypeOfferings {
		got = append(got, string(o.InstanceType)+"@"+aws.ToString(o.Location)+"/"+string(o.LocationType))
	}
	if diff := cmp.Diff([]string{"m5.large@us-east-1a/availability-zone", "m5.large@us-east-1c/availability-zone"}, got); diff != "" {
		t.Errorf("offerings (-want +got):\n%s", diff)
	}
	// Every priced catalog type is offered in each of the three zones.
	prices, err := catalog.LoadPrices(catalog.DefaultOptions())
	must(t, err)
	n := 0
	op := ec2.NewDescribeInstanceTypeOfferingsPaginator(e.client, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000)})
	for op.HasMorePages() {
		page, err := op.NextPage(ctx)
		must(t, err)
		n += len(page.InstanceTypeOfferings)
	}
	if n != len(prices)/2 {
		t.Errorf("%d zonal offerings, want %d", n, len(prices)/2)
	}
	// Spot prices are the catalog's.
	sp := ec2.NewDescribeSpotPriceHistoryPaginator(e.client, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		StartTime:           aws.Time(e.clk.Now()),
		MaxResults:          aws.Int32(2000),
	})
	m := 0
	for sp.HasMorePages() {
		page, err := sp.NextPage(ctx)
		must(t, err)
		for _, r := range page.SpotPriceHistory {
			m++
			want := prices[catalog.OfferingKey{InstanceType: string(r.InstanceType), Zone: aws.ToString(r.AvailabilityZone), CapacityType: "spot"}]
			if got, _ := strconv.ParseFloat(aws.ToString(r.SpotPrice), 64); got != want || r.Timestamp == nil {
				t.Fatalf("%s in %s: spot %v, want %v", r.InstanceType, aws.ToString(r.AvailabilityZone), got, want)
			}
		}
	}
	if m != len(prices)/2 {
		t.Errorf("%d spot prices, want %d", m, len(prices)/2)
	}
	one, err := e.client.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String("us-east-1b")})
	must(t, err)
	if len(one.SpotPriceHistory) != 1 || !slices.Contains([]string{"us-east-1b"}, aws.ToString(one.SpotPriceHistory[0].AvailabilityZone)) {
		t.Errorf("m5.large in us-east-1b: %+v", one.SpotPriceHistory)
	}
}
