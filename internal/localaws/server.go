package localaws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/eks"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/iam"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/pricing"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sqs"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ssm"
)

// Defaults of Config.
const (
	DefaultRegion            = "us-east-1"
	DefaultClusterName       = "dovetail"
	DefaultKubernetesVersion = eks.DefaultVersion
	DefaultServiceCIDR       = eks.DefaultServiceIPv4CIDR
	DefaultClusterEndpoint   = "https://127.0.0.1:6443"
)

// The fixed local credentials AWSConfig signs with. The endpoint reads the
// credential scope of a signature, never verifies it, so any key works; these
// are the ones tests and `dovetail up` use.
const (
	AccessKeyID     = "AKIADOVETAILLOCAL000"
	SecretAccessKey = "dovetail-local-secret-access-key"
)

// Config configures a Server. The zero value is valid.
type Config struct {
	// Region is the region every service answers for (default us-east-1).
	Region string
	// Port is the loopback port to listen on; 0 picks a free one.
	Port int
	// ClusterName names the EKS cluster, the discovery tags, the node role and
	// the interruption queue (default "dovetail").
	ClusterName string
	// KubernetesVersion is the cluster's minor version, e.g. "1.36" (default
	// eks.DefaultVersion). The seeded AMIs and their SSM parameters are for it.
	KubernetesVersion string
	// ClusterEndpoint is the API server URL EKS DescribeCluster reports and
	// that booting nodes must name (default https://127.0.0.1:6443; the node
	// bridge checks it only when it is set explicitly).
	ClusterEndpoint string
	// ClusterCA is the PEM of the cluster CA EKS DescribeCluster reports.
	ClusterCA []byte
	// ServiceCIDR is the cluster's service IPv4 CIDR (default 10.100.0.0/16).
	ServiceCIDR string
	// InterruptionQueue names the SQS interruption queue (default ClusterName).
	InterruptionQueue string
	// Clock is the endpoint's only clock (default the real clock). A fake
	// clock lets tests step instance lifecycles and interruption reclaims.
	Clock clock.WithTicker
	// Seed makes EC2's ids and every service's throttling decisions
	// deterministic.
	Seed uint64
	// PendingDelay, StoppingDelay and ShuttingDownDelay are EC2's lifecycle
	// delays; TickInterval is how often they are applied (ec2.Config defaults).
	PendingDelay, StoppingDelay, ShuttingDownDelay, TickInterval time.Duration
	// Kubernetes, when set, starts the node bridge (see NodeBridge): running
	// instances become kwok-managed Nodes in that cluster.
	Kubernetes client.Client
	// BootDelay is how long, by Clock, after an instance enters running its
	// Node registers: the time its operating system and kubelet take to
	// boot. 0 (the default) registers the Node as soon as the instance runs.
	BootDelay time.Duration
	// Logger receives structured logs (default logr.Discard()).
	Logger logr.Logger
}

// withDefaults fills in the defaults documented on Config.
func (c Config) withDefaults() Config {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.ClusterName == "" {
		c.ClusterName = DefaultClusterName
	}
	if c.KubernetesVersion == "" {
		c.KubernetesVersion = DefaultKubernetesVersion
	}
	if c.ServiceCIDR == "" {
		c.ServiceCIDR = DefaultServiceCIDR
	}
	if c.InterruptionQueue == "" {
		c.InterruptionQueue = c.ClusterName
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger.GetSink() == nil {
		c.Logger = logr.Discard()
	}
	return c
}

// Server is the local AWS endpoint: one HTTP server on a loopback port in
// front of the EC2, IAM, SSM, Pricing, SQS and EKS services, seeded with an
// account ready for Karpenter (see doc.go).
type Server struct {
	cfg      Config
	url      string
	listener net.Listener
	http     *http.Server

	ec2     *ec2.Service
	iam     *iam.Service
	ssm     *ssm.Service
	pricing *pricing.Service
	sqs     *sqs.Service
	eks     *eks.Service

	seed   Seed
	bridge *NodeBridge

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	amis    []AMI
	eventID uint64

	stopOnce sync.Once
	stopErr  error
}

// Start builds the services, seeds the account, listens on 127.0.0.1 (Port,
// or a free port) and serves until Stop is called or ctx ends. It also runs
// EC2's lifecycle ticker and, when Config.Kubernetes is set, the node bridge.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, fmt.Errorf("starting the local AWS endpoint: listening on port %d: %w", cfg.Port, err)
	}
	s := &Server{cfg: cfg, listener: listener, url: "http://" + listener.Addr().String()}
	if err := s.build(); err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("starting the local AWS endpoint: %w", err)
	}
	if err := s.seedAccount(); err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("starting the local AWS endpoint: seeding the account: %w", err)
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.http.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Logger.Error(err, "local AWS endpoint stopped serving", "url", s.url)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.ec2.Run(s.ctx)
	}()
	go func() {
		<-s.ctx.Done()
		_ = s.Stop()
	}()
	if cfg.Kubernetes != nil {
		s.bridge = NewNodeBridge(s, cfg.Kubernetes)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.bridge.Run(s.ctx)
		}()
	}
	cfg.Logger.Info("local AWS endpoint started", "url", s.url, "region", cfg.Region, "cluster", cfg.ClusterName)
	return s, nil
}

// build creates the services.
func (s *Server) build() error {
	cfg := s.cfg
	s.ec2 = ec2.New(ec2.Config{Region: cfg.Region, Clock: cfg.Clock, Seed: cfg.Seed,
		PendingDelay: cfg.PendingDelay, StoppingDelay: cfg.StoppingDelay,
		ShuttingDownDelay: cfg.ShuttingDownDelay, TickInterval: cfg.TickInterval})
	account := s.ec2.AccountID()
	s.iam = iam.New(iam.Config{AccountID: account, Clock: cfg.Clock, Seed: cfg.Seed})
	s.ssm = ssm.New(ssm.Config{Region: cfg.Region, AccountID: account, Clock: cfg.Clock, Seed: cfg.Seed})
	p, err := pricing.New(pricing.Config{Clock: cfg.Clock, Seed: cfg.Seed})
	if err != nil {
		return fmt.Errorf("building the pricing service: %w", err)
	}
	s.pricing = p
	s.sqs = sqs.New(sqs.Config{Region: cfg.Region, AccountID: account, QueueURLBase: s.url, Clock: cfg.Clock, Seed: cfg.Seed})
	s.eks = eks.New(eks.Config{Region: cfg.Region, AccountID: account, Clock: cfg.Clock, Seed: cfg.Seed})
	return nil
}

// Stop stops serving, the lifecycle ticker and the node bridge, and waits for
// them. It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		s.cancel()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.http.Shutdown(shutdownCtx); err != nil {
			s.stopErr = fmt.Errorf("stopping the local AWS endpoint: %w", err)
			_ = s.http.Close()
		}
		s.wg.Wait()
		s.cfg.Logger.Info("local AWS endpoint stopped", "url", s.url)
	})
	return s.stopErr
}

// URL is the endpoint's base URL, for --endpoint-url and BaseEndpoint.
func (s *Server) URL() string { return s.url }

// Region is the region every service answers for.
func (s *Server) Region() string { return s.cfg.Region }

// ClusterName is the seeded EKS cluster's name.
func (s *Server) ClusterName() string { return s.cfg.ClusterName }

// AccountID is the account that owns every seeded resource.
func (s *Server) AccountID() string { return s.ec2.AccountID() }

// Clock is the endpoint's clock.
func (s *Server) Clock() clock.WithTicker { return s.cfg.Clock }

// EC2 is the EC2 service.
func (s *Server) EC2() *ec2.Service { return s.ec2 }

// IAM is the IAM service.
func (s *Server) IAM() *iam.Service { return s.iam }

// SSM is the SSM Parameter Store service.
func (s *Server) SSM() *ssm.Service { return s.ssm }

// Pricing is the Price List service.
func (s *Server) Pricing() *pricing.Service { return s.pricing }

// SQS is the SQS service.
func (s *Server) SQS() *sqs.Service { return s.sqs }

// EKS is the EKS service.
func (s *Server) EKS() *eks.Service { return s.eks }

// Seed describes the seeded account: its network, role and queue.
func (s *Server) Seed() Seed { return s.seed }

// Nodes is the node bridge, nil when Config.Kubernetes was not set.
func (s *Server) Nodes() *NodeBridge { return s.bridge }

// BootFailures lists the instances whose boot the node bridge refused (user
// data that does not parse, names another cluster or API server), oldest
// first; nil without a node bridge.
func (s *Server) BootFailures() []BootFailure {
	if s.bridge == nil {
		return nil
	}
	return s.bridge.BootFailures()
}

// AWSConfig returns an aws.Config for the SDK's service clients that talks
// to this endpoint: region Config.Region, the fixed local static credentials
// and BaseEndpoint URL. It reads no environment variable or shared file, so
// the result is the same on every machine; ctx is accepted for symmetry with
// config.LoadDefaultConfig.
func (s *Server) AWSConfig(ctx context.Context) (aws.Config, error) {
	if err := ctx.Err(); err != nil {
		return aws.Config{}, fmt.Errorf("building the local AWS config: %w", err)
	}
	return aws.Config{
		Region:       s.cfg.Region,
		Credentials:  aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, "")),
		BaseEndpoint: aws.String(s.url),
		// Request bodies are buffered: see awsclient.BufferRequestBodies.
		HTTPClient: &http.Client{Timeout: time.Minute, Transport: awsclient.BufferRequestBodies(nil)},
	}, nil
}
