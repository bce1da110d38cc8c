// Package settings holds the AWS provider's settings, with the flag and
// environment names Karpenter's AWS provider uses (CLUSTER_NAME,
// CLUSTER_ENDPOINT, ...), and turns them into aws-sdk-go-v2 clients: the
// SDK's default credential chain (environment, shared config, IRSA web
// identity, EKS Pod Identity, instance metadata), the region, an optional
// endpoint URL (the local AWS endpoint), and a retryer that backs off on
// throttling and counts it.
package settings

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	awspricing "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/pricing"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// Settings configure the AWS provider. Every field is a flag; the name in
// brackets in its usage is the environment variable that sets it too.
type Settings struct {
	// ClusterName names the cluster; instances, templates and profiles are
	// tagged with it. Required.
	ClusterName string
	// ClusterEndpoint is the API server URL nodes join; empty means EKS
	// DescribeCluster's endpoint.
	ClusterEndpoint string
	// ClusterCABundle is the cluster CA (base64 PEM) nodes trust; empty
	// means the controller's own.
	ClusterCABundle string
	// IsolatedVPC means the Pricing API is unreachable: the embedded prices
	// are used.
	IsolatedVPC bool
	// VMMemoryOverheadPercent is the share of memory the hypervisor takes.
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept from pod networking.
	ReservedENIs int
	// InterruptionQueue is the SQS queue of interruption events; empty
	// disables interruption handling.
	InterruptionQueue string
	// Region is the AWS region; empty means the SDK's default chain
	// (AWS_REGION, shared config, instance metadata).
	Region string
	// EndpointURL sends every AWS call to this URL (the local AWS endpoint);
	// empty means AWS's own endpoints.
	EndpointURL string
	// MaxAttempts bounds the SDK's retries of throttled and failed calls.
	MaxAttempts int
	// StaticAccessKeyID and StaticSecretAccessKey, when set, replace the
	// SDK's credential chain. Not flags: dovetail up sets them to the local
	// AWS endpoint's fixed credentials.
	StaticAccessKeyID, StaticSecretAccessKey string
}

// AddFlags registers the settings' flags.
func (s *Settings) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&s.ClusterName, "cluster-name", "", "name of the cluster, required with the aws provider [CLUSTER_NAME]")
	fs.StringVar(&s.ClusterEndpoint, "cluster-endpoint", "", "API server URL nodes join (default: EKS DescribeCluster's) [CLUSTER_ENDPOINT]")
	fs.StringVar(&s.ClusterCABundle, "cluster-ca-bundle", "", "base64 cluster CA bundle nodes trust (default: the controller's) [CLUSTER_CA_BUNDLE]")
	fs.BoolVar(&s.IsolatedVPC, "isolated-vpc", false, "the VPC cannot reach the AWS Pricing API; use the embedded prices [ISOLATED_VPC]")
	fs.Float64Var(&s.VMMemoryOverheadPercent, "vm-memory-overhead-percent", 0.075, "share of an instance's memory taken by the hypervisor [VM_MEMORY_OVERHEAD_PERCENT]")
	fs.IntVar(&s.ReservedENIs, "reserved-enis", 0, "network interfaces kept from pod networking per instance [RESERVED_ENIS]")
	fs.StringVar(&s.InterruptionQueue, "interruption-queue", "", "SQS queue of EC2 interruption events; empty disables interruption handling [INTERRUPTION_QUEUE]")
	fs.StringVar(&s.Region, "aws-region", "", "AWS region (default: the SDK's chain: AWS_REGION, shared config, instance metadata) [AWS_REGION]")
	fs.StringVar(&s.EndpointURL, "aws-endpoint-url", "", "send every AWS call to this URL, e.g. the local AWS endpoint of dovetail up [AWS_ENDPOINT_URL]")
	fs.IntVar(&s.MaxAttempts, "aws-max-attempts", 5, "attempts per AWS call, retries of throttled and failed calls included [AWS_MAX_ATTEMPTS]")
}

// AddFlagsDefaults sets every setting to its flag's default, for callers
// that build Settings without parsing flags.
func (s *Settings) AddFlagsDefaults() {
	s.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
}

// Validate reports every missing or invalid setting, naming its flag and
// environment variable.
func (s *Settings) Validate() error {
	var errs []error
	if strings.TrimSpace(s.ClusterName) == "" {
		errs = append(errs, errors.New("--cluster-name (CLUSTER_NAME) is required with --cloud-provider aws"))
	}
	if s.VMMemoryOverheadPercent < 0 || s.VMMemoryOverheadPercent >= 1 {
		errs = append(errs, fmt.Errorf("--vm-memory-overhead-percent (VM_MEMORY_OVERHEAD_PERCENT) %v is not in [0, 1)", s.VMMemoryOverheadPercent))
	}
	if s.ReservedENIs < 0 {
		errs = append(errs, fmt.Errorf("--reserved-enis (RESERVED_ENIS) %d is negative", s.ReservedENIs))
	}
	if s.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("--aws-max-attempts (AWS_MAX_ATTEMPTS) %d is below 1", s.MaxAttempts))
	}
	if s.ClusterEndpoint != "" {
		if u, err := url.Parse(s.ClusterEndpoint); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--cluster-endpoint (CLUSTER_ENDPOINT) %q is not an http(s) URL", s.ClusterEndpoint))
		}
	}
	if s.EndpointURL != "" {
		if u, err := url.Parse(s.EndpointURL); err != nil || u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--aws-endpoint-url (AWS_ENDPOINT_URL) %q is not an http(s) URL", s.EndpointURL))
		}
	}
	return errors.Join(errs...)
}

// ThrottlesMetric counts AWS responses that were throttling errors, by error
// code, including the last attempt's; all but the last are retried with the
// SDK's backoff.
func ThrottlesMetric() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dovetail_aws_api_throttles_total",
		Help: "AWS API responses that were throttling errors (retried with backoff until the attempts run out), by error code.",
	}, []string{"code"})
}

// LoadConfig builds the SDK configuration: the default credential chain,
// the region, the endpoint URL and a retryer that counts throttles in
// throttles (which may be nil).
func (s *Settings) LoadConfig(ctx context.Context, throttles *prometheus.CounterVec) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if s.Region != "" {
		opts = append(opts, config.WithRegion(s.Region))
	}
	opts = append(opts, config.WithRetryer(func() aws.Retryer {
		return &countingRetryer{
			Retryer:   retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = s.MaxAttempts }),
			throttles: throttles,
		}
	}))
	if s.StaticAccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(s.StaticAccessKeyID, s.StaticSecretAccessKey, "")))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: set --aws-region (AWS_REGION) or a region in the shared AWS config")
	}
	if s.EndpointURL != "" {
		cfg.BaseEndpoint = aws.String(s.EndpointURL)
	}
	// Request bodies are buffered so that a fast endpoint's answer never
	// races smithy-go's early close of the body (see awsclient).
	cfg.HTTPClient = &http.Client{Transport: awsclient.BufferRequestBodies(awshttp.NewBuildableClient().GetTransport())}
	return cfg, nil
}

// NewClients returns one SDK client per service the provider calls. The
// Price List API is served from a few regions only, so its client signs for
// and calls the one that serves the controller's region
// (awspricing.EndpointRegion): a controller in us-west-2 asks us-east-1.
func NewClients(cfg aws.Config) sdk.Clients {
	return sdk.Clients{
		EC2: ec2.NewFromConfig(cfg),
		IAM: iam.NewFromConfig(cfg),
		SSM: ssm.NewFromConfig(cfg),
		Pricing: pricing.NewFromConfig(cfg, func(o *pricing.Options) {
			o.Region = awspricing.EndpointRegion(cfg.Region)
		}),
		SQS: sqs.NewFromConfig(cfg),
		EKS: eks.NewFromConfig(cfg),
	}
}

// countingRetryer is the SDK's standard retryer, counting throttles.
type countingRetryer struct {
	aws.Retryer
	throttles *prometheus.CounterVec
}

// IsErrorRetryable counts a throttling error, then asks the standard
// retryer. The SDK asks it of every failed attempt, the last one too, so
// no throttle goes uncounted (RetryDelay is skipped on the last attempt and
// when the retry quota is spent).
func (r *countingRetryer) IsErrorRetryable(err error) bool {
	if r.throttles != nil {
		for _, t := range retry.DefaultThrottles {
			if t.IsErrorThrottle(err) == aws.TrueTernary {
				code := awsclient.ErrorCode(err)
				if code == "" {
					code = "unknown"
				}
				r.throttles.WithLabelValues(code).Inc()
				break
			}
		}
	}
	return r.Retryer.IsErrorRetryable(err)
}
