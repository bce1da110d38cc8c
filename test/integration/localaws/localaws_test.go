// Package localaws_test runs the local AWS endpoint against a real
// kube-apiserver: an instance launched through the real EC2 SDK client boots
// (its user data is read as nodeadm would) into a Node with EC2's name,
// provider ID, labels, taints and capacity, and the Node goes when the
// instance terminates; user data for another cluster makes no Node. Time is
// a fake clock; waits poll with deadlines.
package localaws_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

var testEnv *env.Environment

func TestMain(m *testing.M) {
	os.Exit(env.Run(m, controlplane.ProfileAPIServer, &testEnv))
}

// cluster is the cluster name every test server is seeded for.
const cluster = "itest"

// endpoint is a started server with an EC2 client and its fake clock.
type endpoint struct {
	server *localaws.Server
	ec2    *awsec2.Client
	clock  *testclock.FakeClock
}

// startEndpoint starts a server whose node bridge writes to the test
// control plane.
func startEndpoint(t *testing.T) *endpoint {
	t.Helper()
	return startEndpointWith(t, localaws.Config{})
}

// startEndpointWith is startEndpoint with cfg's other fields (BootDelay, ...).
func startEndpointWith(t *testing.T, cfg localaws.Config) *endpoint {
	t.Helper()
	clk := testclock.NewFakeClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.ClusterName, cfg.ClusterEndpoint = cluster, testEnv.ControlPlane.RESTConfig.Host
	cfg.Clock, cfg.Kubernetes = clk, testEnv.Client
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
	return &endpoint{server: s, ec2: awsec2.NewFromConfig(awsCfg), clock: clk}
}

// al2023UserData is a MIME document with a shell part and a NodeConfig, as
// Karpenter renders for AL2023.
func al2023UserData(clusterName, apiServer string) string {
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	return `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "custom setup"
--//
Content-Type: application/node.eks.aws

# Karpenter Generated NodeConfig
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
metadata: {}
spec:
  cluster:
    apiServerEndpoint: ` + apiServer + `
    certificateAuthority: ` + ca + `
    cidr: 10.100.0.0/16
    name: ` + clusterName + `
  containerd: {}
  instance:
    localStorage: {}
  kubelet:
    config:
      clusterDNS:
      - 10.100.0.10
      maxPods: 58
      registerWithTaints:
      - effect: NoSchedule
        key: dedicated
        value: ml
      - effect: NoExecute
        key: karpenter.sh/unregistered
    flags:
    - --node-labels="karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default,team=ml"
--//--
`
}

// launch creates a launch template with the user data on the newest AL2023
// x86_64 AMI and launches one m5.large through CreateFleet in the first
// subnet; it returns the instance.
func (e *endpoint) launch(t *testing.T, name, userData string) string {
	t.Helper()
	ctx := context.Background()
	ami, _ := e.server.LatestAMI(localaws.FamilyAL2023, localaws.VariantStandard, localaws.ArchX86_64)
	seed := e.server.Seed()
	_, err := e.ec2.CreateLaunchTemplate(ctx, &awsec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:  aws.String(ami.Image.ID),
			UserData: aws.String(base64.StdEncoding.EncodeToString([]byte(userData))),
			NetworkInterfaces: []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
				DeviceIndex: aws.Int32(0), Groups: []string{seed.ClusterSecurityGroup.ID, seed.NodeSecurityGroup.ID},
			}},
		},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	out, err := e.ec2.CreateFleet(ctx, &awsec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceTypeM5Large, SubnetId: aws.String(seed.Subnets[0].ID)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		OnDemandOptions: &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
	})
	if err != nil {
		t.Fatalf("CreateFleet: %v", err)
	}
	if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("CreateFleet launched %+v (errors %+v), want one instance", out.Instances, out.Errors)
	}
	return out.Instances[0].InstanceIds[0]
}

// boot moves the clock past the pending delay so the instance runs.
func (e *endpoint) boot() {
	e.clock.Step(ec2.DefaultPendingDelay)
	e.server.EC2().Advance()
}

// TestInstanceBecomesNodeAndGoesOnTermination launches an instance and
// follows its Node from registration to deletion.
func TestInstanceBecomesNodeAndGoesOnTermination(t *testing.T) {
	e := startEndpoint(t)
	id := e.launch(t, "karpenter.k8s.aws/boots", al2023UserData(cluster, testEnv.ControlPlane.RESTConfig.Host))
	inst, _ := e.server.EC2().Instance(id)
	if !strings.HasSuffix(inst.PrivateDNSName, ".ec2.internal") || !strings.HasPrefix(inst.PrivateDNSName, "ip-10-0-") {
		t.Fatalf("instance DNS name %q", inst.PrivateDNSName)
	}
	node := &corev1.Node{}
	key := client.ObjectKey{Name: inst.PrivateDNSName}
	if err := testEnv.Client.Get(context.Background(), key, node); err == nil {
		t.Fatalf("node %s exists while the instance is pending", key.Name)
	}

	e.boot()
	env.Eventually(t, 30*time.Second, "node "+key.Name+" registers", func(ctx context.Context) (bool, error) {
		return testEnv.Client.Get(ctx, key, node) == nil, nil
	})
	if want := fmt.Sprintf("aws:///us-east-1a/%s", id); node.Spec.ProviderID != want {
		t.Errorf("provider ID %q, want %q", node.Spec.ProviderID, want)
	}
	if node.Annotations[controlplane.KwokNodeAnnotationKey] != controlplane.KwokNodeAnnotationValue {
		t.Errorf("node is not kwok-managed: annotations %v", node.Annotations)
	}
	wantLabels := map[string]string{
		"kubernetes.io/hostname": key.Name, "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-east-1a",
		"topology.kubernetes.io/region": "us-east-1", "topology.k8s.aws/zone-id": inst.ZoneID,
		"karpenter.sh/nodepool": "default", "karpenter.sh/capacity-type": "on-demand",
		"karpenter.k8s.aws/ec2nodeclass": "default", "team": "ml",
	}
	for k, v := range wantLabels {
		if node.Labels[k] != v {
			t.Errorf("label %s=%q, want %q", k, node.Labels[k], v)
		}
	}
	wantTaints := []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule},
		{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
	// The apiserver's TaintNodesByCondition admission adds not-ready to every new Node.
	if len(node.Spec.Taints) != len(wantTaints)+1 {
		t.Errorf("taints %v, want %v and node.kubernetes.io/not-ready", node.Spec.Taints, wantTaints)
	}
	for _, w := range wantTaints {
		found := false
		for _, have := range node.Spec.Taints {
			found = found || (have.Key == w.Key && have.Value == w.Value && have.Effect == w.Effect)
		}
		if !found {
			t.Errorf("taint %v missing from %v", w, node.Spec.Taints)
		}
	}
	checkCapacity(t, node)

	if _, err := e.ec2.TerminateInstances(context.Background(), &awsec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatalf("TerminateInstances: %v", err)
	}
	env.Eventually(t, 30*time.Second, "node "+key.Name+" is deleted", func(ctx context.Context) (bool, error) {
		return !env.Exists(ctx, t, testEnv.Client, &corev1.Node{ObjectMeta: node.ObjectMeta}), nil
	})
	if f := e.server.BootFailures(); len(f) != 0 {
		t.Errorf("boot failures %+v, want none", f)
	}
}

// checkCapacity compares the Node's capacity and allocatable with the
// catalog's m5.large under AL2023 with maxPods 58.
func checkCapacity(t *testing.T, node *corev1.Node) {
	t.Helper()
	opts := catalog.DefaultOptions()
	maxPods := int32(58)
	opts.Kubelet.MaxPods = &maxPods
	types, err := catalog.Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range types {
		if it.Name != "m5.large" {
			continue
		}
		for name, want := range it.Capacity {
			if have := node.Status.Capacity[name]; have.Cmp(want) != 0 {
				t.Errorf("capacity %s %s, want %s", name, have.String(), want.String())
			}
		}
		for name, want := range it.Allocatable {
			if have := node.Status.Allocatable[name]; have.Cmp(want) != 0 {
				t.Errorf("allocatable %s %s, want %s", name, have.String(), want.String())
			}
		}
	}
	if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Cmp(resource.MustParse("58")) != 0 {
		t.Errorf("pods capacity %s, want the user data's maxPods 58", pods.String())
	}
	if node.Status.NodeInfo.Architecture != "amd64" || node.Status.NodeInfo.OperatingSystem != "linux" {
		t.Errorf("node info %+v", node.Status.NodeInfo)
	}
}

// TestWrongBootstrapMakesNoNode launches instances whose user data a node
// could not join the cluster with: each is reported as a boot failure with
// its reason and registers no Node.
func TestWrongBootstrapMakesNoNode(t *testing.T) {
	e := startEndpoint(t)
	cases := map[string]struct{ userData, reason string }{
		"other-cluster": {al2023UserData("other", testEnv.ControlPlane.RESTConfig.Host), `joins cluster "other"`},
		"other-server":  {al2023UserData(cluster, "https://10.9.9.9:443"), `names API server "https://10.9.9.9:443"`},
		"no-nodeconfig": {"#!/bin/bash\necho hello\n", "does not boot"},
	}
	ids := map[string]string{}
	for name, c := range cases {
		ids[e.launch(t, "karpenter.k8s.aws/"+name, c.userData)] = name
	}
	e.boot()
	env.Eventually(t, 30*time.Second, "three boot failures", func(context.Context) (bool, error) {
		return len(e.server.BootFailures()) == len(cases), nil
	})
	for _, f := range e.server.BootFailures() {
		c := cases[ids[f.InstanceID]]
		if !strings.Contains(f.Reason, c.reason) {
			t.Errorf("%s: reason %q, want it to say %q", ids[f.InstanceID], f.Reason, c.reason)
		}
		if env.Exists(context.Background(), t, testEnv.Client, &corev1.Node{ObjectMeta: metaName(f.NodeName)}) {
			t.Errorf("%s: node %s exists", ids[f.InstanceID], f.NodeName)
		}
		if inst, _ := e.server.EC2().Instance(f.InstanceID); inst.State != "running" {
			t.Errorf("%s: instance %s, want running (EC2 does not know the boot failed)", ids[f.InstanceID], inst.State)
		}
	}
}

// metaName is the metadata of a cluster-scoped object named name.
func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

// TestBridgeResyncsOnStartAndFollowsStops starts a bridge after an instance
// is already running (it registers the Node from its resync), then stops the
// instance behind the client's back (the Node goes).
func TestBridgeResyncsOnStartAndFollowsStops(t *testing.T) {
	clk := testclock.NewFakeClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := localaws.Start(ctx, localaws.Config{ClusterName: cluster, ClusterEndpoint: testEnv.ControlPlane.RESTConfig.Host, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	cfg, err := s.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{server: s, ec2: awsec2.NewFromConfig(cfg), clock: clk}
	id := e.launch(t, "karpenter.k8s.aws/resync", al2023UserData(cluster, testEnv.ControlPlane.RESTConfig.Host))
	e.boot()
	inst, _ := s.EC2().Instance(id)
	if inst.State != ec2.StateRunning {
		t.Fatalf("instance %s, want running", inst.State)
	}

	bridgeCtx, stopBridge := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		localaws.NewNodeBridge(s, testEnv.Client).Run(bridgeCtx)
	}()
	defer func() { stopBridge(); <-done }()
	key := client.ObjectKey{Name: inst.PrivateDNSName}
	env.Eventually(t, 30*time.Second, "node "+key.Name+" registers from the resync", func(ctx context.Context) (bool, error) {
		return testEnv.Client.Get(ctx, key, &corev1.Node{}) == nil, nil
	})
	if err := s.StopInstance(id); err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 30*time.Second, "node "+key.Name+" is deleted after the stop", func(ctx context.Context) (bool, error) {
		return !env.Exists(ctx, t, testEnv.Client, &corev1.Node{ObjectMeta: metaName(key.Name)}), nil
	})
}
