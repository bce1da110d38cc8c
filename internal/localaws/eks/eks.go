package eks

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/awsjson"
)

// Defaults PutCluster fills in.
const (
	// DefaultVersion is the Kubernetes minor version of a cluster that names none.
	DefaultVersion = "1.36"
	// DefaultServiceIPv4CIDR is the service CIDR EKS picks when none is given.
	DefaultServiceIPv4CIDR = "10.100.0.0/16"
)

// Config configures a Service.
type Config struct {
	// Region is the region the service answers for (default us-east-1).
	Region string
	// AccountID owns the clusters (default 123456789012).
	AccountID string
	// Clock stamps createdAt (default the real clock).
	Clock clock.PassiveClock
	// Seed fixes which requests SetThrottle's rate refuses.
	Seed uint64
}

// Cluster is what a test sets about a cluster; DescribeCluster reports it.
type Cluster struct {
	// Name is the cluster name.
	Name string
	// Endpoint is the API server URL.
	Endpoint string
	// CertificateAuthority is the PEM of the cluster CA; DescribeCluster sends
	// it base64-encoded in certificateAuthority.data, as EKS does.
	CertificateAuthority []byte
	// Version is the Kubernetes minor version (default DefaultVersion).
	Version string
	// ServiceIPv4CIDR is kubernetesNetworkConfig.serviceIpv4Cidr (default
	// DefaultServiceIPv4CIDR when IPFamily is ipv4).
	ServiceIPv4CIDR string
	// ServiceIPv6CIDR is kubernetesNetworkConfig.serviceIpv6Cidr (ipv6 clusters).
	ServiceIPv6CIDR string
	// IPFamily is "ipv4" (default) or "ipv6".
	IPFamily string
	// Status is the cluster status (default ACTIVE).
	Status string
	// PlatformVersion is the EKS platform version (default "eks.1").
	PlatformVersion string
	// RoleARN is the cluster IAM role.
	RoleARN string
	// Tags are the cluster's tags.
	Tags map[string]string
	// CreatedAt is set by PutCluster from the clock when zero.
	CreatedAt time.Time
}

// Service is a local EKS control plane answering DescribeCluster. It
// implements http.Handler.
type Service struct {
	region, account string
	clock           clock.PassiveClock
	throttle        *awsjson.Throttle

	mu       sync.Mutex
	clusters map[string]Cluster
}

// New returns a Service with no clusters.
func New(cfg Config) *Service {
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.AccountID == "" {
		cfg.AccountID = "123456789012"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Service{region: cfg.Region, account: cfg.AccountID, clock: cfg.Clock,
		throttle: awsjson.NewThrottle(cfg.Seed), clusters: map[string]Cluster{}}
}

// SetThrottle makes that fraction (0 to 1) of requests fail with ThrottlingException (HTTP
// 429 with X-Amzn-ErrorType, as the EKS model declares it)
// right after authentication, as EKS answers requests beyond the account's
// request rate; 0 turns it off.
func (s *Service) SetThrottle(rate float64) { s.throttle.SetRate(rate) }

// PutCluster creates or replaces a cluster, filling in the defaults documented
// on Cluster. A replaced cluster keeps its creation time unless c sets one.
func (s *Service) PutCluster(c Cluster) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.IPFamily == "" {
		c.IPFamily = "ipv4"
	}
	if c.IPFamily == "ipv4" && c.ServiceIPv4CIDR == "" {
		c.ServiceIPv4CIDR = DefaultServiceIPv4CIDR
	}
	if c.Status == "" {
		c.Status = "ACTIVE"
	}
	if c.PlatformVersion == "" {
		c.PlatformVersion = "eks.1"
	}
	if c.CreatedAt.IsZero() {
		if old, ok := s.clusters[c.Name]; ok {
			c.CreatedAt = old.CreatedAt
		} else {
			c.CreatedAt = s.clock.Now()
		}
	}
	c.CertificateAuthority = append([]byte(nil), c.CertificateAuthority...)
	c.Tags = cloneTags(c.Tags)
	s.clusters[c.Name] = c
}

// UpdateCluster applies change to the named cluster (to set its endpoint, CA,
// service CIDR or version while a test runs). It reports whether the cluster
// exists.
func (s *Service) UpdateCluster(name string, change func(*Cluster)) bool {
	s.mu.Lock()
	c, ok := s.clusters[name]
	s.mu.Unlock()
	if !ok {
		return false
	}
	change(&c)
	c.Name = name
	s.PutCluster(c)
	return true
}

// DeleteCluster removes a cluster; it reports whether it existed.
func (s *Service) DeleteCluster(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.clusters[name]
	delete(s.clusters, name)
	return ok
}

// Clusters returns the cluster names, sorted.
func (s *Service) Clusters() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.clusters))
	for name := range s.clusters {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f := awsjson.Authenticate(r, "eks", s.region); f != nil {
		awsjson.WriteError(w, awsjson.ContentTypeREST, awsjson.JSONAuthError(f))
		return
	}
	if s.throttle.Throttled() {
		awsjson.WriteError(w, awsjson.ContentTypeREST, awsjson.ThrottlingException(http.StatusTooManyRequests))
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "clusters" && parts[1] != "" {
		name, err := url.PathUnescape(parts[1])
		if err == nil {
			s.describeCluster(w, name)
			return
		}
	}
	awsjson.WriteError(w, awsjson.ContentTypeREST, &awsjson.Error{Status: http.StatusNotFound, Type: "UnknownOperationException",
		Message: "The requested operation " + r.Method + " " + r.URL.Path + " is not supported by this endpoint"})
}

var clusterName = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]*$`)

// describeCluster answers DescribeCluster (GET /clusters/{name}).
//
// https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html
//
// An unknown cluster is ResourceNotFoundException (HTTP 404) carrying
// clusterName; a name EKS could never have created is the same, as it names no
// cluster.
func (s *Service) describeCluster(w http.ResponseWriter, name string) {
	s.mu.Lock()
	c, ok := s.clusters[name]
	s.mu.Unlock()
	if !ok || len(name) > 100 || !clusterName.MatchString(name) {
		awsjson.WriteError(w, awsjson.ContentTypeREST, &awsjson.Error{Status: http.StatusNotFound, Type: "ResourceNotFoundException",
			Message: "No cluster found for name: " + name + ".", Fields: map[string]string{"clusterName": name}})
		return
	}
	network := map[string]any{"ipFamily": c.IPFamily}
	if c.ServiceIPv4CIDR != "" {
		network["serviceIpv4Cidr"] = c.ServiceIPv4CIDR
	}
	if c.ServiceIPv6CIDR != "" {
		network["serviceIpv6Cidr"] = c.ServiceIPv6CIDR
	}
	cluster := map[string]any{
		"name":                    c.Name,
		"arn":                     "arn:aws:eks:" + s.region + ":" + s.account + ":cluster/" + c.Name,
		"createdAt":               float64(c.CreatedAt.UnixMilli()) / 1000,
		"version":                 c.Version,
		"status":                  c.Status,
		"platformVersion":         c.PlatformVersion,
		"kubernetesNetworkConfig": network,
		"certificateAuthority":    map[string]string{},
		"tags":                    cloneTags(c.Tags),
	}
	if c.Endpoint != "" {
		cluster["endpoint"] = c.Endpoint
	}
	if len(c.CertificateAuthority) > 0 {
		cluster["certificateAuthority"] = map[string]string{"data": base64.StdEncoding.EncodeToString(c.CertificateAuthority)}
	}
	if c.RoleARN != "" {
		cluster["roleArn"] = c.RoleARN
	}
	awsjson.WriteJSON(w, awsjson.ContentTypeREST, map[string]any{"cluster": cluster})
}

func cloneTags(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
