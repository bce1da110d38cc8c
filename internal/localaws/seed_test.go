package localaws

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsssm "github.com/aws/aws-sdk-go-v2/service/ssm"
)

// TestDiscoveryTagFindsTheNetwork selects the seeded network as Karpenter's
// discovery selectors do.
func TestDiscoveryTagFindsTheNetwork(t *testing.T) {
	_, cfg, _ := start(t, Config{ClusterName: "blue"})
	ctx := context.Background()
	client := awsec2.NewFromConfig(cfg)
	byTag := []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"blue"}}}
	subnets, err := client.DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{Filters: byTag})
	if err != nil {
		t.Fatalf("DescribeSubnets: %v", err)
	}
	zones := map[string]bool{}
	for _, sn := range subnets.Subnets {
		zones[aws.ToString(sn.AvailabilityZone)] = true
		if aws.ToInt32(sn.AvailableIpAddressCount) != 8192-5 {
			t.Errorf("subnet %s has %d free addresses, want %d", aws.ToString(sn.SubnetId), aws.ToInt32(sn.AvailableIpAddressCount), 8192-5)
		}
	}
	if len(subnets.Subnets) != 3 || !zones["us-east-1a"] || !zones["us-east-1b"] || !zones["us-east-1c"] {
		t.Errorf("subnets by discovery tag in zones %v, want one in each of us-east-1a, b, c", zones)
	}
	groups, err := client.DescribeSecurityGroups(ctx, &awsec2.DescribeSecurityGroupsInput{Filters: byTag})
	if err != nil || len(groups.SecurityGroups) != 2 {
		t.Errorf("DescribeSecurityGroups by discovery tag: %+v, %v; want the cluster and node groups", groups, err)
	}
	other := []ec2types.Filter{{Name: aws.String("tag:karpenter.sh/discovery"), Values: []string{"green"}}}
	if none, err := client.DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{Filters: other}); err != nil || len(none.Subnets) != 0 {
		t.Errorf("subnets of another cluster: %+v, %v; want none", none, err)
	}
}

// TestAliasParametersResolveToTheNewestSeededAMI resolves every seeded
// line's recommended/latest and versioned parameters through SSM, and the
// images through DescribeImages.
func TestAliasParametersResolveToTheNewestSeededAMI(t *testing.T) {
	s, cfg, _ := start(t, Config{KubernetesVersion: "1.36"})
	ctx := context.Background()
	ssmClient, ec2Client := awsssm.NewFromConfig(cfg), awsec2.NewFromConfig(cfg)
	wantAliases := map[string]bool{
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/recommended/image_id":   true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/standard/recommended/image_id":    true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/nvidia/recommended/image_id":     true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/arm64/nvidia/recommended/image_id":      true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/neuron/recommended/image_id":     true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2/recommended/image_id":                      true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2-arm64/recommended/image_id":                true,
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2-gpu/recommended/image_id":                  true,
		"/aws/service/bottlerocket/aws-k8s-1.36/x86_64/latest/image_id":                                true,
		"/aws/service/bottlerocket/aws-k8s-1.36/arm64/latest/image_id":                                 true,
		"/aws/service/bottlerocket/aws-k8s-1.36-nvidia/x86_64/latest/image_id":                         true,
		"/aws/service/bottlerocket/aws-k8s-1.36-nvidia/arm64/latest/image_id":                          true,
		"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.36/image_id": true,
	}
	wantVersioned := []string{
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.36-v20261001/image_id",
		"/aws/service/eks/optimized-ami/1.36/amazon-linux-2-arm64/amazon-eks-arm64-node-1.36-v20261001/image_id",
		"/aws/service/bottlerocket/aws-k8s-1.36-nvidia/arm64/1.49.0/image_id",
	}
	amis := s.AMIs()
	if len(amis) != 2*len(wantAliases) {
		t.Fatalf("%d AMIs seeded, want two for each of %d lines", len(amis), len(wantAliases))
	}
	for _, ami := range amis {
		delete(wantAliases, ami.AliasParameter)
		latest, _ := s.LatestAMI(ami.Family, ami.Variant, ami.Arch)
		out, err := ssmClient.GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(ami.AliasParameter)})
		if err != nil || aws.ToString(out.Parameter.Value) != latest.Image.ID {
			t.Errorf("%s: %+v, %v; want %s", ami.AliasParameter, out, err, latest.Image.ID)
		}
		if ami.VersionParameter != "" {
			out, err := ssmClient.GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(ami.VersionParameter)})
			if err != nil || aws.ToString(out.Parameter.Value) != ami.Image.ID {
				t.Errorf("%s: %+v, %v; want %s", ami.VersionParameter, out, err, ami.Image.ID)
			}
		}
		if !latest.Image.CreationDate.After(ami.Image.CreationDate) && latest.Image.ID != ami.Image.ID {
			t.Errorf("%s: the alias names %s (%s), not the newest image", ami.AliasParameter, latest.Image.Name, latest.Image.CreationDate)
		}
	}
	for path := range wantAliases {
		t.Errorf("no seeded AMI behind %s", path)
	}
	for _, path := range wantVersioned {
		if _, err := ssmClient.GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(path)}); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	images, err := ec2Client.DescribeImages(ctx, &awsec2.DescribeImagesInput{Owners: []string{"amazon"},
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{"bottlerocket-aws-k8s-1.36-x86_64-*"}}}})
	if err != nil || len(images.Images) != 2 {
		t.Fatalf("DescribeImages of Bottlerocket x86_64: %+v, %v; want 2", images, err)
	}
	if a, b := aws.ToString(images.Images[0].CreationDate), aws.ToString(images.Images[1].CreationDate); a == b {
		t.Errorf("both Bottlerocket releases were created at %s", a)
	}
	for _, img := range images.Images {
		if name := aws.ToString(img.Name); !strings.HasPrefix(name, "bottlerocket-aws-k8s-1.36-x86_64-v1.") {
			t.Errorf("image name %s", name)
		}
	}
}

// TestPublishAMIMovesTheAlias publishes a new release and resolves the alias
// to it.
func TestPublishAMIMovesTheAlias(t *testing.T) {
	s, cfg, clk := start(t, Config{})
	clk.Step(1)
	before, _ := s.LatestAMI(FamilyAL2023, VariantStandard, ArchARM64)
	ami, err := s.PublishAMI(FamilyAL2023, VariantStandard, ArchARM64, "v20261201")
	if err != nil {
		t.Fatal(err)
	}
	if ami.Image.Name != "amazon-eks-node-al2023-arm64-standard-1.36-v20261201" || !ami.Image.CreationDate.Equal(clk.Now()) {
		t.Errorf("published %s created %s", ami.Image.Name, ami.Image.CreationDate)
	}
	out, err := awsssm.NewFromConfig(cfg).GetParameter(context.Background(), &awsssm.GetParameterInput{Name: aws.String(before.AliasParameter)})
	if err != nil || aws.ToString(out.Parameter.Value) != ami.Image.ID || aws.ToInt64(&out.Parameter.Version) != 3 {
		t.Errorf("alias after publishing: %+v, %v; want %s at version 3", out.Parameter, err, ami.Image.ID)
	}
	if _, err := s.PublishAMI(FamilyAL2023, VariantStandard, ArchARM64, "v20261201"); err == nil {
		t.Errorf("publishing the same version twice succeeded")
	}
	if _, err := s.PublishAMI(FamilyAL2023, "bogus", ArchARM64, "v1"); err == nil {
		t.Errorf("publishing an unknown line succeeded")
	}
}
