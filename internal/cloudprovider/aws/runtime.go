package aws

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/ami"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/capacityreservation"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instanceprofile"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instancetype"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/interruption"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/launchtemplate"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/nodeclass"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/pricing"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/securitygroup"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/settings"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/subnet"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/tagging"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/userdata"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
)

// Refresh periods of the provider's background loops.
const (
	// PricingRefreshPeriod is how often prices are fetched, as Karpenter does.
	PricingRefreshPeriod = 12 * time.Hour
	// LaunchTemplateGCPeriod is how often unused launch templates are deleted.
	LaunchTemplateGCPeriod = 5 * time.Minute
)

// Deps are what Build needs from the operator.
type Deps struct {
	Settings   settings.Settings
	KubeClient client.Client
	// APIReader reads without the cache (the kube-dns Service, once).
	APIReader  client.Reader
	RESTConfig *rest.Config
	Clock      clock.WithTicker
	Recorder   events.Recorder
	// Registerer receives the provider's own metrics; nil skips them.
	Registerer prometheus.Registerer
	// NodeClaimsDisrupted is the core's karpenter_nodeclaims_disrupted_total,
	// counted by the interruption controller; nil skips it.
	NodeClaimsDisrupted *prometheus.CounterVec
}

// Runtime is a composed AWS provider: the CloudProvider and the
// controllers and loops it needs beside the core's.
type Runtime struct {
	CloudProvider *CloudProvider
	// Controllers are the EC2NodeClass controller and the provider's loops;
	// each has Name and Register(ctx, mgr), as the core's controllers do.
	Controllers []interface {
		Name() string
		Register(ctx context.Context, mgr manager.Manager) error
	}
	Clients sdk.Clients
	// NodeClasses is the EC2NodeClass controller (also in Controllers), for
	// tests that reconcile directly.
	NodeClasses *nodeclass.Controller
	// Tagging names registered instances (also in Controllers).
	Tagging *tagging.Controller
}

// Build composes the AWS provider: SDK clients, the cluster facts nodes
// need (endpoint and service CIDR from EKS when not set, the CA from the
// controller's own configuration, the kube-dns IP), and every provider part.
func Build(ctx context.Context, deps Deps) (*Runtime, error) {
	logger := log.FromContext(ctx).WithName("aws")
	s := deps.Settings
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var throttles, launchFailures *prometheus.CounterVec
	if deps.Registerer != nil {
		throttles = settings.ThrottlesMetric()
		launchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "karpenter_cloudprovider_instance_launch_failures_total",
			Help: "Instance launches EC2 turned down, by zone, capacity type and error code.",
		}, []string{"zone", "capacity_type", "reason"})
		for _, c := range []prometheus.Collector{throttles, launchFailures} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering AWS metrics: %w", err)
			}
		}
	}
	cfg, err := s.LoadConfig(ctx, throttles)
	if err != nil {
		return nil, err
	}
	clients := settings.NewClients(cfg)
	cluster, cidr, err := clusterFacts(ctx, deps, clients)
	if err != nil {
		return nil, err
	}
	logger.Info("Resolved cluster facts", "cluster", cluster.Name, "endpoint", cluster.Endpoint, "serviceCIDR", cluster.CIDR, "clusterDNS", cluster.DNS, "region", cfg.Region)

	prices, err := pricing.New(clients.Pricing, clients.EC2, deps.Clock, pricing.Options{Region: cfg.Region, IsolatedVPC: s.IsolatedVPC})
	if err != nil {
		return nil, err
	}
	offerings := unavailable.New(deps.Clock)
	instanceTypes, err := instancetype.New(clients.EC2, prices, offerings, deps.Clock, instancetype.Settings{
		Region: cfg.Region, VMMemoryOverheadPercent: s.VMMemoryOverheadPercent, ReservedENIs: s.ReservedENIs,
	})
	if err != nil {
		return nil, err
	}
	reservations := capacityreservation.NewProvider(clients.EC2, deps.Clock)
	instanceTypes.UseReservations(reservations)
	templates := launchtemplate.NewProvider(clients.EC2, deps.Clock, s.ClusterName)
	instances := instance.NewProvider(clients.EC2, deps.Clock, instance.Options{
		ClusterName:              s.ClusterName,
		OnUnavailable:            offerings.MarkUnavailable,
		OnReservationLaunched:    reservations.MarkLaunched,
		OnReservationUnavailable: reservations.MarkUnavailable,
		OnReservationReleased:    reservations.MarkTerminated,
		LaunchFailures:           launchFailures,
	})
	versions, err := discovery.NewDiscoveryClientForConfig(deps.RESTConfig)
	if err != nil {
		return nil, fmt.Errorf("creating discovery client: %w", err)
	}
	nodeClasses := nodeclass.NewController(deps.KubeClient, deps.Clock, nodeclass.Dependencies{
		Subnets:               subnet.NewProvider(clients.EC2, deps.Clock),
		SecurityGroups:        securitygroup.NewProvider(clients.EC2, deps.Clock),
		AMIs:                  ami.NewProvider(clients.EC2, clients.SSM, versions, deps.Clock),
		InstanceProfiles:      instanceprofile.NewProvider(clients.IAM, cfg.Region, s.ClusterName, deps.Clock),
		CapacityReservations:  reservations,
		ClusterCIDR:           cidr,
		ValidateUserData:      userdata.Validate,
		DeleteLaunchTemplates: templates.DeleteForNodeClass,
		Recorder:              eventf{deps.Recorder},
	})
	provider := New(deps.KubeClient, deps.Clock, cluster, instanceTypes, templates, instances)
	rt := &Runtime{CloudProvider: provider, Clients: clients, NodeClasses: nodeClasses,
		Tagging: tagging.NewController(deps.KubeClient, clients.EC2, s.ClusterName)}
	rt.Controllers = append(rt.Controllers, nodeClasses,
		&loop{name: "aws.pricing", clock: deps.Clock, period: PricingRefreshPeriod, run: prices.Refresh},
		&loop{name: "aws.launchtemplate.gc", clock: deps.Clock, period: LaunchTemplateGCPeriod, run: templates.DeleteUnused},
		rt.Tagging,
		capacityreservation.NewExpirationController(deps.KubeClient, deps.Clock, deps.Recorder),
	)
	if s.InterruptionQueue != "" {
		rt.Controllers = append(rt.Controllers, interruption.NewController(deps.KubeClient, deps.Clock, clients.SQS, s.InterruptionQueue, interruption.Options{
			Recorder: deps.Recorder, MarkUnavailable: offerings.MarkUnavailable, MarkReservationUnavailable: reservations.MarkUnavailable,
			Registerer: deps.Registerer, NodeClaimsDisrupted: deps.NodeClaimsDisrupted,
		}))
	}
	return rt, nil
}

// clusterFacts resolves what every node's user data carries: the endpoint
// (EKS DescribeCluster when not set), the CA (the controller's own when not
// set), the service CIDR (EKS, for AL2023) and the kube-dns IP. A missing
// endpoint stops the controller; a missing CIDR or DNS IP is logged.
func clusterFacts(ctx context.Context, deps Deps, clients sdk.Clients) (launchtemplate.Cluster, *nodeclass.ClusterCIDR, error) {
	logger := log.FromContext(ctx)
	s := deps.Settings
	cluster := launchtemplate.Cluster{Name: s.ClusterName, Endpoint: s.ClusterEndpoint, CABundle: s.ClusterCABundle}
	cidr := nodeclass.NewClusterCIDR(clients.EKS, s.ClusterName)
	if cluster.Endpoint == "" {
		out, err := clients.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(s.ClusterName)})
		if err != nil {
			return cluster, nil, fmt.Errorf("--cluster-endpoint (CLUSTER_ENDPOINT) is not set and EKS DescribeCluster %s failed: %w", s.ClusterName, err)
		}
		if out.Cluster == nil || aws.ToString(out.Cluster.Endpoint) == "" {
			return cluster, nil, fmt.Errorf("--cluster-endpoint (CLUSTER_ENDPOINT) is not set and EKS cluster %s has no endpoint", s.ClusterName)
		}
		cluster.Endpoint = aws.ToString(out.Cluster.Endpoint)
	}
	if cluster.CABundle == "" && deps.RESTConfig != nil && len(deps.RESTConfig.CAData) > 0 {
		cluster.CABundle = base64.StdEncoding.EncodeToString(deps.RESTConfig.CAData)
	}
	if c, err := cidr.Resolve(ctx); err != nil {
		logger.Error(err, "Resolving the service CIDR; AL2023 nodes cannot launch until it resolves")
	} else {
		cluster.CIDR = c
	}
	reader := deps.APIReader
	if reader == nil {
		reader = deps.KubeClient
	}
	dns := &corev1.Service{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "kube-dns"}, dns); err != nil {
		logger.Error(err, "Reading Service kube-system/kube-dns; nodes get no cluster DNS unless the EC2NodeClass's kubelet sets clusterDNS")
	} else if dns.Spec.ClusterIP != "" && dns.Spec.ClusterIP != corev1.ClusterIPNone {
		cluster.DNS = []string{dns.Spec.ClusterIP}
	}
	return cluster, cidr, nil
}

// eventf adapts Dovetail's deduplicating recorder to the Eventf shape.
type eventf struct{ rec events.Recorder }

func (e eventf) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if e.rec == nil {
		return
	}
	e.rec.Publish(events.Event{InvolvedObject: object, Type: eventtype, Reason: reason, Message: fmt.Sprintf(messageFmt, args...)})
}

// loop runs a function every period on the leader, first at once.
type loop struct {
	name   string
	clock  clock.WithTicker
	period time.Duration
	run    func(context.Context) error
}

// loopRetryAfterFailure is how soon a loop that failed runs again, when its
// period is longer: a Pricing API that was briefly unreachable must not
// leave the embedded prices in use for the next 12 hours.
const loopRetryAfterFailure = 5 * time.Minute

// Name identifies the loop.
func (l *loop) Name() string { return l.name }

// Register adds the loop to the manager.
func (l *loop) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(l) }

// NeedLeaderElection runs the loop on the leader only.
func (l *loop) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends: every period after a success, and
// after loopRetryAfterFailure (or the period, when shorter) after a failure,
// which is logged.
func (l *loop) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName(l.name)
	for {
		wait := l.period
		if err := l.run(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Refreshing")
			wait = min(l.period, loopRetryAfterFailure)
		}
		timer := l.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}
