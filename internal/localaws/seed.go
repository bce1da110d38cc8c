package localaws

import (
	"fmt"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/eks"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/iam"
)

// DiscoveryTagKey is the tag Karpenter's subnet and security group selectors
// conventionally match; the seeded network carries it with the cluster name.
const DiscoveryTagKey = "karpenter.sh/discovery"

// VPCCIDR is the seeded VPC's block; the subnets are /19s of it.
const VPCCIDR = "10.0.0.0/16"

// Seed is what Start created in the account.
type Seed struct {
	// VPC is the cluster's VPC (10.0.0.0/16).
	VPC ec2.VPC
	// Subnets are one private /19 per zone <region>a, b and c.
	Subnets []ec2.Subnet
	// ClusterSecurityGroup is the EKS cluster security group.
	ClusterSecurityGroup ec2.SecurityGroup
	// NodeSecurityGroup is the node security group.
	NodeSecurityGroup ec2.SecurityGroup
	// NodeRole is KarpenterNodeRole-<cluster>.
	NodeRole iam.Role
	// InterruptionQueueURL is the URL of the interruption queue.
	InterruptionQueueURL string
}

// NodeRoleName is the node role Karpenter's getting-started guide creates
// for a cluster.
func NodeRoleName(clusterName string) string { return "KarpenterNodeRole-" + clusterName }

// seedAccount creates the account's network, node role, AMIs and their SSM
// parameters, interruption queue and EKS cluster.
func (s *Server) seedAccount() error {
	cfg := s.cfg
	discovery := func(name string) map[string]string {
		return map[string]string{DiscoveryTagKey: cfg.ClusterName, "Name": name}
	}
	vpcTags := discovery(cfg.ClusterName + "-vpc")
	vpc, err := s.ec2.AddVPC(ec2.VPC{CIDR: VPCCIDR, Tags: vpcTags})
	if err != nil {
		return fmt.Errorf("adding the VPC: %w", err)
	}
	s.seed.VPC = vpc
	for i, suffix := range []string{"a", "b", "c"} {
		zone := cfg.Region + suffix
		tags := discovery(fmt.Sprintf("%s-private-%s", cfg.ClusterName, zone))
		tags["kubernetes.io/role/internal-elb"] = "1"
		sn, err := s.ec2.AddSubnet(ec2.Subnet{VPCID: vpc.ID, Zone: zone, CIDR: fmt.Sprintf("10.0.%d.0/19", 32*i), Tags: tags})
		if err != nil {
			return fmt.Errorf("adding the subnet of %s: %w", zone, err)
		}
		s.seed.Subnets = append(s.seed.Subnets, sn)
	}
	clusterSG := discovery("eks-cluster-sg-" + cfg.ClusterName)
	clusterSG["aws:eks:cluster-name"] = cfg.ClusterName
	clusterSG["kubernetes.io/cluster/"+cfg.ClusterName] = "owned"
	if s.seed.ClusterSecurityGroup, err = s.ec2.AddSecurityGroup(ec2.SecurityGroup{VPCID: vpc.ID,
		Name: "eks-cluster-sg-" + cfg.ClusterName, Description: "EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.",
		Tags: clusterSG}); err != nil {
		return fmt.Errorf("adding the cluster security group: %w", err)
	}
	if s.seed.NodeSecurityGroup, err = s.ec2.AddSecurityGroup(ec2.SecurityGroup{VPCID: vpc.ID,
		Name: cfg.ClusterName + "-node", Description: "Security group for all nodes in the cluster",
		Tags: discovery(cfg.ClusterName + "-node")}); err != nil {
		return fmt.Errorf("adding the node security group: %w", err)
	}
	s.seed.NodeRole = s.iam.AddRole(NodeRoleName(cfg.ClusterName), "/")
	if err := s.seedAMIs(); err != nil {
		return fmt.Errorf("adding the EKS-optimized AMIs: %w", err)
	}
	// Karpenter's getting-started CloudFormation template keeps interruption
	// messages for 300 seconds.
	if s.seed.InterruptionQueueURL, err = s.sqs.CreateQueue(cfg.InterruptionQueue,
		map[string]string{"MessageRetentionPeriod": "300"}); err != nil {
		return fmt.Errorf("creating the interruption queue %s: %w", cfg.InterruptionQueue, err)
	}
	endpoint := cfg.ClusterEndpoint
	if endpoint == "" {
		endpoint = DefaultClusterEndpoint
	}
	s.eks.PutCluster(eks.Cluster{
		Name: cfg.ClusterName, Endpoint: endpoint, CertificateAuthority: cfg.ClusterCA,
		Version: cfg.KubernetesVersion, ServiceIPv4CIDR: cfg.ServiceCIDR,
		RoleARN: fmt.Sprintf("arn:aws:iam::%s:role/%s-cluster-role", s.ec2.AccountID(), cfg.ClusterName),
		Tags:    map[string]string{DiscoveryTagKey: cfg.ClusterName},
	})
	return nil
}
