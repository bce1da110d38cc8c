package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsprovider "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/settings"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// AWSOptions configure the local AWS endpoint of StartAWS.
type AWSOptions struct {
	// ClusterName names the cluster in the account (default "dovetail").
	ClusterName string
	// Port of the endpoint; 0 picks a free one.
	Port int
	// Endpoint tunes the endpoint further (lifecycle delays, clock, seed);
	// its ClusterName, ClusterEndpoint, ClusterCA, ServiceCIDR,
	// KubernetesVersion, Port, Kubernetes and Logger fields are set by
	// StartAWS.
	Endpoint localaws.Config
	// Logger receives the endpoint's logs.
	Logger logr.Logger
}

// StartAWS starts the full control plane, installs the CRDs, starts the
// local AWS endpoint whose EKS cluster is this control plane and whose
// running instances become kwok Nodes in it, and, when defaults is true,
// creates the default EC2NodeClass and NodePool. The controller is not
// started; see StartAWSController.
func StartAWS(ctx context.Context, opts controlplane.Options, awsOpts AWSOptions, defaults bool) (*Cluster, error) {
	opts.Profile = controlplane.ProfileFull
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane: %w", err)
	}
	c, err := setup(ctx, cp, false)
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	cfg := awsOpts.Endpoint
	cfg.ClusterName = awsOpts.ClusterName
	if cfg.ClusterName == "" {
		cfg.ClusterName = localaws.DefaultClusterName
	}
	cfg.Port = awsOpts.Port
	if cfg, err = EndpointConfig(cp, cfg); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	cfg.Kubernetes = c.Client
	cfg.Logger = awsOpts.Logger
	server, err := localaws.Start(ctx, cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting the local AWS endpoint: %w", err), cp.Stop())
	}
	c.AWS = server
	if defaults {
		for _, obj := range []client.Object{DefaultEC2NodeClass(cfg.ClusterName), DefaultAWSNodePool()} {
			if err := c.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, errors.Join(fmt.Errorf("creating default %T %s: %w", obj, obj.GetName(), err), c.Stop())
			}
		}
	}
	return c, nil
}

// EndpointConfig returns cfg with the facts EKS DescribeCluster reports
// taken from the control plane: the API server's URL (ClusterEndpoint), its
// CA (ClusterCA), its service range (ServiceCIDR,
// controlplane.ServiceClusterIPRange), so that nodes' user data carries the
// cluster's own service CIDR and cluster DNS, and its version as
// <major>.<minor> read through discovery (KubernetesVersion), so that the
// seeded AMIs and their SSM parameters are the ones the AWS provider looks
// up for this API server.
func EndpointConfig(cp *controlplane.ControlPlane, cfg localaws.Config) (localaws.Config, error) {
	cfg.ClusterEndpoint = cp.RESTConfig.Host
	cfg.ClusterCA = cp.RESTConfig.CAData
	cfg.ServiceCIDR = controlplane.ServiceClusterIPRange
	versions, err := discovery.NewDiscoveryClientForConfig(cp.RESTConfig)
	if err != nil {
		return cfg, fmt.Errorf("creating a discovery client for the API server's version: %w", err)
	}
	version, err := kubernetesVersion(versions)
	if err != nil {
		return cfg, err
	}
	cfg.KubernetesVersion = version
	return cfg, nil
}

// kubernetesVersion reads the API server's version as <major>.<minor>, with
// a trailing "+" of the minor removed, as the AWS provider reads it
// (aws/ami.Provider.KubernetesVersion).
func kubernetesVersion(versions discovery.ServerVersionInterface) (string, error) {
	info, err := versions.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the API server's version: %w", err)
	}
	minor := strings.TrimSuffix(info.Minor, "+")
	if info.Major == "" || minor == "" {
		return "", fmt.Errorf("the API server reports version %q (major %q, minor %q): no <major>.<minor> to seed AMIs for", info.GitVersion, info.Major, info.Minor)
	}
	return info.Major + "." + minor, nil
}

// AWSSettings are the AWS provider's settings for the cluster's local
// endpoint: its URL and fixed credentials, region, cluster name and
// interruption queue; the cluster endpoint comes from the endpoint's EKS
// DescribeCluster, as on EKS.
func (c *Cluster) AWSSettings() settings.Settings {
	var s settings.Settings
	s.AddFlagsDefaults()
	s.ClusterName = c.AWS.ClusterName()
	s.Region = c.AWS.Region()
	s.EndpointURL = c.AWS.URL()
	s.StaticAccessKeyID, s.StaticSecretAccessKey = localaws.AccessKeyID, localaws.SecretAccessKey
	s.InterruptionQueue = c.AWS.ClusterName()
	return s
}

// AWSOperatorOptions are OperatorOptions with EC2NodeClass as the default
// NodeClass of v1beta1 manifests.
func AWSOperatorOptions() operator.Options {
	o := OperatorOptions()
	o.WebhookDefaultNodeClass = awsprovider.NodeClassGVK().GroupKind()
	return o
}

// StartAWSController runs the Dovetail controller with the AWS provider
// against the cluster and its local AWS endpoint, in the background until
// Stop.
func (c *Cluster) StartAWSController(ctx context.Context, opOpts operator.Options, s settings.Settings) (*Controller, error) {
	if c.AWS == nil {
		return nil, errors.New("the cluster has no local AWS endpoint: start it with StartAWS")
	}
	return c.startController(ctx, opOpts, func(ctx context.Context, op *operator.Operator) error {
		return compose.RunWithAWS(ctx, op, s)
	})
}
