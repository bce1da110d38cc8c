package localaws_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	awsssm "github.com/aws/aws-sdk-go-v2/service/ssm"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// startClusterEndpoint starts an endpoint configured from the test control
// plane the way StartAWS configures it (localcluster.EndpointConfig).
func startClusterEndpoint(t *testing.T) (*localaws.Server, aws.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg, err := localcluster.EndpointConfig(testEnv.ControlPlane, localaws.Config{ClusterName: cluster})
	if err != nil {
		t.Fatalf("configuring the endpoint from the control plane: %v", err)
	}
	s, err := localaws.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("starting the endpoint: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stopping the endpoint: %v", err)
		}
	})
	awsCfg, err := s.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s, awsCfg
}

// TestDescribeClusterReportsTheAPIServersServiceRange checks that EKS
// DescribeCluster, configured as StartAWS configures it, reports the service
// range the API server allocates from (the kubernetes Service's ClusterIP
// falls inside it), and that the range does not overlap the seeded VPC, which
// EKS refuses.
func TestDescribeClusterReportsTheAPIServersServiceRange(t *testing.T) {
	s, cfg := startClusterEndpoint(t)
	ctx := context.Background()
	out, err := awseks.NewFromConfig(cfg).DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if out.Cluster.KubernetesNetworkConfig == nil {
		t.Fatalf("DescribeCluster reports no kubernetesNetworkConfig")
	}
	reported := aws.ToString(out.Cluster.KubernetesNetworkConfig.ServiceIpv4Cidr)
	serviceRange, err := netip.ParsePrefix(reported)
	if err != nil {
		t.Fatalf("DescribeCluster's serviceIpv4Cidr %q: %v", reported, err)
	}
	svc := &corev1.Service{}
	if err := testEnv.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc); err != nil {
		t.Fatalf("reading the kubernetes Service: %v", err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		t.Fatalf("kubernetes Service ClusterIP %q: %v", svc.Spec.ClusterIP, err)
	}
	if !serviceRange.Contains(ip) {
		t.Errorf("the kubernetes Service's ClusterIP %s is outside the service CIDR %s EKS reports", ip, serviceRange)
	}
	vpc, err := netip.ParsePrefix(s.Seed().VPC.CIDR)
	if err != nil {
		t.Fatalf("seeded VPC CIDR %q: %v", s.Seed().VPC.CIDR, err)
	}
	if serviceRange.Overlaps(vpc) {
		t.Errorf("service CIDR %s overlaps the VPC %s", serviceRange, vpc)
	}
	if got := aws.ToString(out.Cluster.Endpoint); got != testEnv.ControlPlane.RESTConfig.Host {
		t.Errorf("DescribeCluster endpoint %s, want the API server %s", got, testEnv.ControlPlane.RESTConfig.Host)
	}
}

// TestAMIsAreSeededForTheAPIServersVersion checks that EKS DescribeCluster
// reports the API server's <major>.<minor> and that the EKS-optimized AMIs'
// SSM parameters, read through the SDK, are published for that version, the
// one the AWS provider looks them up for.
func TestAMIsAreSeededForTheAPIServersVersion(t *testing.T) {
	s, cfg := startClusterEndpoint(t)
	ctx := context.Background()
	info, err := testEnv.Clientset.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("reading the API server's version: %v", err)
	}
	want := info.Major + "." + strings.TrimSuffix(info.Minor, "+")
	out, err := awseks.NewFromConfig(cfg).DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		t.Fatalf("DescribeCluster: %v", err)
	}
	if got := aws.ToString(out.Cluster.Version); got != want {
		t.Errorf("DescribeCluster version %s, want the API server's %s", got, want)
	}
	latest, ok := s.LatestAMI(localaws.FamilyAL2023, localaws.VariantStandard, localaws.ArchX86_64)
	if !ok {
		t.Fatalf("no AL2023 AMI seeded")
	}
	name := "/aws/service/eks/optimized-ami/" + want + "/amazon-linux-2023/x86_64/standard/recommended/image_id"
	param, err := awsssm.NewFromConfig(cfg).GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		t.Fatalf("GetParameter %s: %v", name, err)
	}
	if got := aws.ToString(param.Parameter.Value); got != latest.Image.ID {
		t.Errorf("%s = %s, want the newest seeded AMI %s", name, got, latest.Image.ID)
	}
}
