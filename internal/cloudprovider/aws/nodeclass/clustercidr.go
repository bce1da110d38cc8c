package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// ErrNoServiceCIDR says the EKS cluster reports no service CIDR.
var ErrNoServiceCIDR = errors.New("the EKS cluster reports no service CIDR")

// ClusterCIDR finds the cluster's service CIDR, which AL2023 user data
// (nodeadm) needs, from EKS DescribeCluster: ServiceIpv4Cidr, else
// ServiceIpv6Cidr. Once found it is kept for the life of the process. The
// nodeclass controller resolves it for AL2023 classes; the launch code
// reads it with Get. It is safe for concurrent use.
type ClusterCIDR struct {
	eks     sdk.EKS
	cluster string

	mu   sync.Mutex
	cidr string
}

// NewClusterCIDR returns a resolver for the EKS cluster clusterName.
func NewClusterCIDR(client sdk.EKS, clusterName string) *ClusterCIDR {
	return &ClusterCIDR{eks: client, cluster: clusterName}
}

// Get returns the service CIDR, or "" until Resolve has found it.
func (c *ClusterCIDR) Get() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cidr
}

// Resolve returns the service CIDR, asking EKS the first time. It returns
// ErrNoServiceCIDR (wrapped) when the cluster has none.
func (c *ClusterCIDR) Resolve(ctx context.Context) (string, error) {
	if cidr := c.Get(); cidr != "" {
		return cidr, nil
	}
	out, err := c.eks.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(c.cluster)})
	if err != nil {
		return "", fmt.Errorf("describing EKS cluster %s: %w", c.cluster, err)
	}
	var cidr string
	if out.Cluster != nil && out.Cluster.KubernetesNetworkConfig != nil {
		cfg := out.Cluster.KubernetesNetworkConfig
		cidr = aws.ToString(cfg.ServiceIpv4Cidr)
		if cidr == "" {
			cidr = aws.ToString(cfg.ServiceIpv6Cidr)
		}
	}
	if cidr == "" {
		return "", fmt.Errorf("EKS cluster %s: %w", c.cluster, ErrNoServiceCIDR)
	}
	c.mu.Lock()
	c.cidr = cidr
	c.mu.Unlock()
	return cidr, nil
}
