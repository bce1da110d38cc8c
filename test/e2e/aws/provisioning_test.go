package aws_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/awse2e"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/workloads"
)

var (
	nodeNamePattern   = regexp.MustCompile(`^ip-10-0-\d{1,3}-\d{1,3}\.ec2\.internal$`)
	providerIDPattern = regexp.MustCompile(`^aws:///([a-z0-9-]+)/(i-[0-9a-f]+)$`)
)

// TestSpreadDeploymentGetsEC2Nodes: a 50-replica Deployment spread over
// the zones (maxSkew 1, DoNotSchedule) on a NodePool that wants at least
// three instance families gets c/m/r nodes in all three zones and every pod
// runs; each NodeClaim offers at least three families; every Node is an
// EC2 instance (provider ID, name, the instance itself). It also measures
// the time from NodeClaim creation to Node Ready.
func TestSpreadDeploymentGetsEC2Nodes(t *testing.T) {
	const replicas, minFamilies = 50, 3
	s := cluster.Begin(t)
	pool := awse2e.AWSPool("spread", localcluster.DefaultName)
	awse2e.WithRequirement(pool, awsv1.LabelInstanceFamily, corev1.NodeSelectorOpExists, ptr.To(minFamilies))
	s.Pool(pool)
	ns := s.Namespace()
	d := awse2e.Deployment(ns, "spread", pool.Name, replicas, "1", "1Gi")
	d.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
	}}
	cluster.Create(t, d)
	pods := cluster.WaitRunning(t, ns, "spread", replicas, 5*time.Minute)

	nodes := cluster.NodesOf(t, pods)
	perZone := map[string]int{}
	for _, p := range pods {
		perZone[nodes[p.Spec.NodeName].Labels[corev1.LabelTopologyZone]]++
	}
	if len(perZone) != 3 {
		t.Errorf("pods run in %d zones, want 3: %v", len(perZone), perZone)
	}
	lo, hi := replicas, 0
	for _, n := range perZone {
		lo, hi = min(lo, n), max(hi, n)
	}
	if hi-lo > 1 {
		t.Errorf("zone skew is %d, want at most 1: %v", hi-lo, perZone)
	}
	instances := map[string]ec2.Instance{}
	for _, inst := range cluster.AWS.EC2().Instances() {
		instances[inst.ID] = inst
	}
	for name, node := range nodes {
		checkEC2Node(t, node, instances)
		if c := node.Labels[awsv1.LabelInstanceCategory]; !slices.Contains([]string{"c", "m", "r"}, c) {
			t.Errorf("node %s is of category %q (%s), want c, m or r", name, c, node.Labels[corev1.LabelInstanceTypeStable])
		}
	}

	claims := cluster.PoolClaims(t, pool.Name)
	var readyAfter []time.Duration
	for _, nc := range claims {
		families := map[string]bool{}
		for _, r := range nc.Spec.Requirements {
			if r.Key == corev1.LabelInstanceTypeStable && r.Operator == corev1.NodeSelectorOpIn {
				for _, it := range r.Values {
					families[strings.SplitN(it, ".", 2)[0]] = true
				}
			}
		}
		if len(families) < minFamilies {
			t.Errorf("NodeClaim %s offers %d instance families %v, want at least %d", nc.Name, len(families), keys(families), minFamilies)
		}
		if nc.Status.NodeName == "" {
			continue
		}
		node := &corev1.Node{}
		if err := cluster.Client.Get(context.Background(), client.ObjectKey{Name: nc.Status.NodeName}, node); err != nil {
			t.Fatalf("reading node %s of NodeClaim %s: %v", nc.Status.NodeName, nc.Name, err)
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				readyAfter = append(readyAfter, c.LastTransitionTime.Sub(nc.CreationTimestamp.Time))
			}
		}
	}
	if len(readyAfter) == 0 {
		t.Fatalf("no NodeClaim has a Ready node")
	}
	sort.Slice(readyAfter, func(i, j int) bool { return readyAfter[i] < readyAfter[j] })
	t.Logf("%d pods on %d nodes (%d NodeClaims) in zones %v; NodeClaim creation to Node Ready: p50 %v, min %v, max %v over %d launches",
		len(pods), len(nodes), len(claims), perZone, readyAfter[len(readyAfter)/2], readyAfter[0], readyAfter[len(readyAfter)-1], len(readyAfter))
}

// checkEC2Node checks that a Node is an EC2 instance's: provider ID
// aws:///<zone>/i-..., an ip-10-0-*.ec2.internal name, and a running
// instance of its type, zone and capacity type behind it.
func checkEC2Node(t *testing.T, node *corev1.Node, instances map[string]ec2.Instance) {
	t.Helper()
	m := providerIDPattern.FindStringSubmatch(node.Spec.ProviderID)
	if len(m) < 2 || m[1] != node.Labels[corev1.LabelTopologyZone] {
		t.Errorf("node %s has provider ID %q, want aws:///%s/i-...", node.Name, node.Spec.ProviderID, node.Labels[corev1.LabelTopologyZone])
		return
	}
	if !nodeNamePattern.MatchString(node.Name) {
		t.Errorf("node name %s is not ip-10-0-*.ec2.internal", node.Name)
	}
	inst, ok := instances[m[2]]
	switch {
	case !ok:
		t.Errorf("node %s: no EC2 instance %s", node.Name, m[2])
	case inst.State != ec2.StateRunning || inst.PrivateDNSName != node.Name || inst.Zone != m[1] ||
		inst.InstanceType != node.Labels[corev1.LabelInstanceTypeStable] || inst.CapacityType != node.Labels[v1.CapacityTypeLabelKey]:
		t.Errorf("node %s (%s, %s, %s) does not match its instance %s (%s, %s, %s, %s, %s)", node.Name,
			node.Labels[corev1.LabelInstanceTypeStable], m[1], node.Labels[v1.CapacityTypeLabelKey],
			inst.ID, inst.State, inst.PrivateDNSName, inst.InstanceType, inst.Zone, inst.CapacityType)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestInsufficientCapacityFallsBackToNextOffering: with the cheapest spot
// offering of the pod's shape out of capacity in every zone, the launch
// gets the next offering in one CreateFleet call (no launch loop), and the
// launch-failure metric counts the shortage.
func TestInsufficientCapacityFallsBackToNextOffering(t *testing.T) {
	const cheap, next = "m5.large", "m5.xlarge"
	s := cluster.Begin(t)
	pool := awse2e.AWSPool("ice", localcluster.DefaultName)
	setRequirement(pool, v1.CapacityTypeLabelKey, v1.CapacityTypeSpot)
	awse2e.WithRequirement(pool, corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, nil, cheap, next)
	for _, sn := range cluster.Seed().Subnets {
		cluster.AWS.SetInsufficientCapacity(cheap, sn.Zone, ec2.CapacityTypeSpot, true)
		t.Cleanup(func() { cluster.AWS.SetInsufficientCapacity(cheap, sn.Zone, ec2.CapacityTypeSpot, false) })
	}
	s.Pool(pool)
	ns := s.Namespace()
	before := cluster.Calls.Snapshot()
	cluster.Create(t, awse2e.Deployment(ns, "ice", pool.Name, 1, "1", "1Gi"))
	pods := cluster.WaitRunning(t, ns, "ice", 1, 3*time.Minute)

	node := cluster.NodesOf(t, pods)[pods[0].Spec.NodeName]
	if got := node.Labels[corev1.LabelInstanceTypeStable]; got != next || node.Labels[v1.CapacityTypeLabelKey] != v1.CapacityTypeSpot {
		t.Errorf("the pod runs on %s/%s, want the next spot offering %s", got, node.Labels[v1.CapacityTypeLabelKey], next)
	}
	nc := cluster.ClaimOfNode(t, pool.Name, node.Name)
	env.Eventually(t, 2*time.Minute, "NodeClaim "+nc.Name+" to be initialized", func(ctx context.Context) (bool, error) {
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeInitialized), nil
	})
	var metric string
	env.Eventually(t, time.Minute, "the launch-failure metric to count InsufficientInstanceCapacity", func(ctx context.Context) (bool, error) {
		text, err := s.Scrape(ctx)
		if err != nil {
			return false, err
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "karpenter_cloudprovider_instance_launch_failures_total{") &&
				strings.Contains(line, `reason="InsufficientInstanceCapacity"`) && strings.Contains(line, `capacity_type="spot"`) {
				metric = line
				return true, nil
			}
		}
		return false, nil
	})
	launched := cluster.LiveInstances(pool.Name)
	fleets := cluster.Calls.Since(before)["ec2:CreateFleet"]
	if len(launched) != 1 || fleets != 1 {
		t.Errorf("%d instances launched in %d CreateFleet calls for one pod, want 1 in 1", len(launched), fleets)
	}
	events := claimEvents(t, nc.Name)
	t.Logf("launched %s (%s) after %s ran short; %s; NodeClaim events: %v", next, nc.Status.ProviderID, cheap, metric, events)
}

// claimEvents lists "reason: message" of the NodeClaim's events.
func claimEvents(t *testing.T, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := cluster.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "NodeClaim" && e.InvolvedObject.Name == name {
			out = append(out, fmt.Sprintf("%s: %s", e.Reason, e.Message))
		}
	}
	return out
}

// TestAPICallsPerLaunch measures the requests the endpoint serves, by
// action, while one pending pod gets one node: first from a controller that
// just started (cold caches), then for a second node (warm caches). Each
// launch must make exactly one CreateFleet call.
func TestAPICallsPerLaunch(t *testing.T) {
	s := cluster.Begin(t)
	cluster.WaitClassReady(t, localcluster.DefaultName, 2*time.Minute)
	pool := s.Pool(awse2e.AWSPool("single", localcluster.DefaultName))
	env.Eventually(t, time.Minute, "NodePool single to be Ready", func(ctx context.Context) (bool, error) {
		np := &v1.NodePool{}
		if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(pool), np); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(np.Status.Conditions, v1.ConditionTypeReady), nil
	})
	ns := s.Namespace()
	d := awse2e.OneNodeEach(awse2e.Deployment(ns, "single", pool.Name, 1, "1", "1Gi"))
	for i, phase := range []string{"cold", "warm"} {
		before := cluster.Calls.Snapshot()
		start := time.Now()
		if i == 0 {
			cluster.Create(t, d)
		} else {
			workloads.Scale(t, cluster.Client, ns, d.Name, int32(i+1))
		}
		pods := cluster.WaitRunning(t, ns, "single", i+1, 3*time.Minute)
		for _, p := range pods {
			nc := cluster.ClaimOfNode(t, pool.Name, p.Spec.NodeName)
			env.Eventually(t, 2*time.Minute, "NodeClaim "+nc.Name+" to be initialized", func(ctx context.Context) (bool, error) {
				if err := cluster.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
					return false, err
				}
				return meta.IsStatusConditionTrue(nc.Status.Conditions, v1.ConditionTypeInitialized), nil
			})
		}
		elapsed := time.Since(start)
		got := cluster.Calls.Since(before)
		if got["ec2:CreateFleet"] != 1 {
			t.Errorf("%s launch: %d CreateFleet calls, want 1: %v", phase, got["ec2:CreateFleet"], got)
		}
		names := make([]string, 0, len(got))
		total := 0
		for k, v := range got {
			names = append(names, fmt.Sprintf("%s=%d", k, v))
			total += v
		}
		sort.Strings(names)
		t.Logf("%s single-node launch (pods scaled to NodeClaim initialized, %v): %d requests: %s", phase,
			elapsed.Round(100*time.Millisecond), total, strings.Join(names, " "))
	}
}
