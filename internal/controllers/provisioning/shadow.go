package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// shadowPublisher publishes a shadow plan: a ShadowLaunch event on the
// NodePool and a log line per NodeClaim it would launch, a ShadowNominated
// or ShadowFailedScheduling event per pod, and the dovetail_shadow_*
// provisioning metrics, which always describe the latest plan.
type shadowPublisher struct {
	recorder events.Recorder
	metrics  *metrics.Metrics
	claims   *metrics.GaugeSeries
	price    *metrics.GaugeSeries
	pods     *metrics.GaugeSeries
}

func newShadowPublisher(recorder events.Recorder, m *metrics.Metrics) *shadowPublisher {
	if m == nil {
		// Composed without metrics (tests that only list controllers).
		m, _ = metrics.New(nil)
	}
	return &shadowPublisher{
		recorder: recorder, metrics: m,
		claims: metrics.NewGaugeSeries(m.Shadow.NodeClaims),
		price:  metrics.NewGaugeSeries(m.Shadow.LaunchPricePerHour),
		pods:   metrics.NewGaugeSeries(m.Shadow.Pods),
	}
}

// shadowLaunch is what a shadow plan would launch: the cheapest offering
// of a planned NodeClaim.
type shadowLaunch struct {
	NodePool, InstanceType, Zone, CapacityType string
	Price                                      float64
	Options                                    int
}

// shadowLaunchOf describes a planned NodeClaim by its cheapest offering.
func shadowLaunchOf(c *simulator.NewNodeClaim) shadowLaunch {
	l := shadowLaunch{NodePool: c.NodePool, Price: c.Price, Options: len(c.InstanceTypes)}
	if len(c.InstanceTypes) == 0 {
		return l
	}
	l.InstanceType = c.InstanceTypes[0].Name
	o, ok := c.InstanceTypes[0].CheapestOffering(func(o cloudprovider.Offering) bool {
		if r, ok := c.Requirements.Get(corev1.LabelTopologyZone); ok && !r.Has(o.Zone) {
			return false
		}
		if r, ok := c.Requirements.Get(v1.CapacityTypeLabelKey); ok && !r.Has(o.CapacityType) {
			return false
		}
		return true
	})
	if ok {
		l.Zone, l.CapacityType = o.Zone, o.CapacityType
	}
	return l
}

// String is the launch in words, for events and logs.
func (l shadowLaunch) String() string {
	return fmt.Sprintf("%s %s in %s at $%.4f/h (%d instance type option(s))", l.InstanceType, l.CapacityType, l.Zone, l.Price, l.Options)
}

// publish publishes the decision; nil (nothing pending) clears the metrics.
func (s *shadowPublisher) publish(ctx context.Context, d *decision) {
	var claims, price, pods metrics.Series
	unschedulable := 0
	if d != nil && d.plan != nil {
		s.metrics.Shadow.Decisions.WithLabelValues("provisioner").Inc()
		shadowed := func(pool string) bool { return d.shadowOnly == nil || d.shadowOnly[pool] }
		logger := log.FromContext(ctx)
		for _, c := range d.plan.NewNodeClaims {
			if !shadowed(c.NodePool) {
				continue
			}
			l := shadowLaunchOf(c)
			existing := realPods(c.Pods) // stand-ins for replicas not created yet are not told
			claims.Add(1, l.NodePool, l.InstanceType, l.CapacityType)
			price.Add(l.Price, l.NodePool)
			pods.Add(float64(len(existing)), l.NodePool, metrics.TargetNew)
			logger.Info("Would create NodeClaim (shadow)", "NodePool", klog.KRef("", c.NodePool), "pods", len(existing),
				"anticipatedReplicas", len(c.Pods)-len(existing),
				"requests", resourceString(c.Requests), "instanceType", l.InstanceType, "zone", l.Zone, "capacityType", l.CapacityType,
				"price", l.Price, "instanceTypes", instanceTypeSummary(c.InstanceTypes))
			if np := d.pools[c.NodePool]; np != nil {
				s.recorder.Publish(shadowLaunchEvent(np, l, existing))
			}
			for _, pod := range existing {
				s.recorder.Publish(shadowNominatedEvent(pod, fmt.Sprintf("a new NodeClaim of NodePool %s (%s)", c.NodePool, l)))
			}
		}
		// Placements on existing nodes and pods placed nowhere are the
		// whole plan's, so they are published in shadow mode only.
		if d.shadowOnly == nil {
			for _, placement := range d.plan.Placements {
				if IsAnticipated(placement.Pod) {
					continue
				}
				pods.Add(1, "", metrics.TargetExisting)
				s.recorder.Publish(shadowNominatedEvent(placement.Pod, "node "+placement.Node))
			}
			for _, u := range d.plan.Unschedulable {
				if IsAnticipated(u.Pod) {
					continue
				}
				unschedulable++
				s.recorder.Publish(shadowFailedSchedulingEvent(u.Pod, u.Reason))
			}
		}
	}
	s.claims.Set(claims)
	s.price.Set(price)
	s.pods.Set(pods)
	s.metrics.Shadow.UnschedulablePods.Set(float64(unschedulable))
}

// shadowLaunchEvent tells a NodePool what it would launch.
func shadowLaunchEvent(np *v1.NodePool, l shadowLaunch, pods []*corev1.Pod) events.Event {
	names := make([]string, 0, len(pods))
	for _, pod := range pods {
		names = append(names, klog.KObj(pod).String())
	}
	slices.Sort(names)
	shown := names
	if len(shown) > 5 {
		shown = append(slices.Clone(shown[:5]), fmt.Sprintf("and %d more", len(names)-5))
	}
	return events.Event{
		InvolvedObject: np,
		Type:           corev1.EventTypeNormal,
		Reason:         shadow.ReasonLaunch,
		Message:        fmt.Sprintf("Would launch a NodeClaim: %s, for %d pod(s): %s", l, len(pods), strings.Join(shown, ", ")),
		DedupeValues:   append([]string{np.Name, l.InstanceType, l.Zone, l.CapacityType}, names...),
	}
}

// shadowNominatedEvent tells a pod where it would be placed.
func shadowNominatedEvent(pod *corev1.Pod, target string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeNormal,
		Reason:         shadow.ReasonNominated,
		Message:        "Would schedule pod on " + target,
		DedupeValues:   []string{string(pod.UID), target},
	}
}

// shadowFailedSchedulingEvent tells a pod why it would be placed nowhere.
func shadowFailedSchedulingEvent(pod *corev1.Pod, reason string) events.Event {
	return events.Event{
		InvolvedObject: pod,
		Type:           corev1.EventTypeWarning,
		Reason:         shadow.ReasonFailedScheduling,
		Message:        "Would not schedule pod, " + reason,
		DedupeValues:   []string{string(pod.UID), reason},
	}
}

// invalidShadowAnnotationEvent tells a NodePool that its shadow annotation
// is neither "true" nor "false", and that it is treated as shadow-only.
func invalidShadowAnnotationEvent(np *v1.NodePool, message string) events.Event {
	return events.Event{
		InvolvedObject: np,
		Type:           corev1.EventTypeWarning,
		Reason:         shadow.ReasonInvalidAnnotation,
		Message:        message,
		DedupeValues:   []string{np.Name, np.Annotations[shadow.AnnotationKey]},
	}
}
