package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// ec2Story holds the AWS-specific pieces of the story: the local AWS
// endpoint, the EC2NodeClass and the instances seen so far.
type ec2Story struct {
	server *localaws.Server
	// known is the last state seen of every instance, by id.
	known map[string]ec2.InstanceState
	// launched and terminated are the ids seen launching and shutting down
	// or terminated, in the order seen.
	launched, terminated []string
	// images counts the instances launched from each AMI.
	images map[string]int
}

func newEC2Story(server *localaws.Server) *ec2Story {
	return &ec2Story{server: server, known: map[string]ec2.InstanceState{}, images: map[string]int{}}
}

// gone says whether an instance state is on the way out.
func gone(state ec2.InstanceState) bool {
	return state == ec2.StateShuttingDown || state == ec2.StateTerminated
}

// alive says whether an instance state is pending or running.
func alive(state ec2.InstanceState) bool {
	return state == ec2.StatePending || state == ec2.StateRunning
}

// observe compares the endpoint's instances with the last call and returns
// the ones launched and the ones that started shutting down since.
func (e *ec2Story) observe() (launched, terminated []ec2.Instance) {
	for _, in := range e.server.EC2().Instances() {
		before, seen := e.known[in.ID]
		e.known[in.ID] = in.State
		if !seen {
			launched = append(launched, in)
			e.launched = append(e.launched, in.ID)
			e.images[in.ImageID]++
		}
		if gone(in.State) && (!seen || !gone(before)) {
			terminated = append(terminated, in)
			e.terminated = append(e.terminated, in.ID)
		}
	}
	return launched, terminated
}

// running counts the instances pending or running.
func (e *ec2Story) running() []ec2.Instance {
	var out []ec2.Instance
	for _, in := range e.server.EC2().Instances() {
		if alive(in.State) {
			out = append(out, in)
		}
	}
	return out
}

// narrate prints a line for each instance launched or terminated since the
// last call, stamped with the step's elapsed time.
func (e *ec2Story) narrate(w io.Writer, stamp string) {
	launched, terminated := e.observe()
	for _, in := range launched {
		fmt.Fprintf(w, "  [%6s] EC2 launched   %s  %s %s in %s (%s)\n", stamp, in.ID, in.InstanceType, in.CapacityType, in.Zone, in.ImageID)
	}
	for _, in := range terminated {
		fmt.Fprintf(w, "  [%6s] EC2 terminated %s  %s %s in %s\n", stamp, in.ID, in.InstanceType, in.CapacityType, in.Zone)
	}
}

// instanceID returns the instance id of an aws:///<zone>/<id> provider ID.
func instanceID(providerID string) string {
	if i := strings.LastIndex(providerID, "/"); i >= 0 && strings.HasPrefix(providerID[i+1:], "i-") {
		return providerID[i+1:]
	}
	return ""
}

// applyEC2Defaults creates the v1 document's EC2NodeClass and NodePool, printing them
// as a user would write them, waits for the EC2NodeClass to be Ready and
// prints what it resolved.
func (s *story) applyEC2Defaults(ctx context.Context) error {
	e := s.ec2
	fmt.Fprintf(s.out, "The local AWS endpoint serves EC2, IAM, SSM, Pricing, SQS and EKS at %s\n", e.server.URL())
	fmt.Fprintf(s.out, "(region %s, account %s, cluster %s): a VPC with a subnet per zone, security groups,\n",
		e.server.Region(), e.server.AccountID(), e.server.ClusterName())
	fmt.Fprintln(s.out, "the node role and EKS-optimized AMIs. Its running instances boot as Nodes that join this cluster.")
	fmt.Fprintln(s.out, "\nApplying the EC2NodeClass and NodePool of Karpenter's v1 API (kubectl apply -f -):")
	fmt.Fprintln(s.out)
	nodeClass := localcluster.DefaultEC2NodeClass(e.server.ClusterName())
	nodePool := localcluster.DefaultAWSNodePool()
	for i, obj := range []client.Object{nodeClass, nodePool} {
		text, err := manifest(obj)
		if err != nil {
			return err
		}
		if i > 0 {
			fmt.Fprintln(s.out, "  ---")
		}
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			fmt.Fprintf(s.out, "  %s\n", line)
		}
	}
	began := s.clock.Now()
	for _, obj := range []client.Object{nodeClass, nodePool} {
		if err := s.cluster.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	fmt.Fprintln(s.out, "\nec2nodeclass.karpenter.k8s.aws/default created, nodepool.karpenter.sh/default created.")
	var nc awsv1.EC2NodeClass
	err := s.until(ctx, func(ctx context.Context) (bool, error) {
		if err := s.cluster.Client.Get(ctx, client.ObjectKeyFromObject(nodeClass), &nc); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(nc.Status.Conditions, awsv1.ConditionTypeReady), nil
	})
	if err != nil {
		if c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady); c != nil {
			err = fmt.Errorf("%w (Ready %s: %s %s)", err, c.Status, c.Reason, c.Message)
		}
		return fmt.Errorf("waiting for EC2NodeClass %s to be Ready: %w", nodeClass.Name, err)
	}
	s.summary.NodeClassReady = true
	fmt.Fprintf(s.out, "EC2NodeClass %s is Ready %s later. Dovetail resolved, through the EC2, SSM and IAM APIs:\n", nc.Name, s.since(began))
	printResolved(s.out, &nc)
	return nil
}

// manifest renders obj as the YAML a user would apply: no status, no
// server-set metadata.
func manifest(obj client.Object) (string, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("encoding %s: %w", obj.GetName(), err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Errorf("decoding %s: %w", obj.GetName(), err)
	}
	delete(m, "status")
	m["metadata"] = map[string]any{"name": obj.GetName()}
	pruneEmpty(m)
	out, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("rendering %s as YAML: %w", obj.GetName(), err)
	}
	return string(out), nil
}

// pruneEmpty removes the empty objects (such as a template's "metadata: {}")
// from a decoded manifest, recursively.
func pruneEmpty(m map[string]any) {
	for k, v := range m {
		if child, ok := v.(map[string]any); ok {
			pruneEmpty(child)
			if len(child) == 0 {
				delete(m, k)
			}
		}
	}
}

// printResolved shows an EC2NodeClass's resolved subnets, security groups,
// AMIs and instance profile.
func printResolved(w io.Writer, nc *awsv1.EC2NodeClass) {
	st := nc.Status
	subnets := make([]string, 0, len(st.Subnets))
	for _, sn := range st.Subnets {
		subnets = append(subnets, fmt.Sprintf("%s (%s)", sn.ID, sn.Zone))
	}
	sort.Strings(subnets)
	groups := make([]string, 0, len(st.SecurityGroups))
	for _, sg := range st.SecurityGroups {
		groups = append(groups, fmt.Sprintf("%s (%s)", sg.ID, sg.Name))
	}
	fmt.Fprintf(w, "  subnets           %s\n", strings.Join(subnets, ", "))
	fmt.Fprintf(w, "  security groups   %s\n", strings.Join(groups, ", "))
	for i, ami := range st.AMIs {
		label := "AMIs"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "  %-17s %s  %s  %s\n", label, ami.ID, ami.Name, amiRequirements(ami.Requirements))
	}
	fmt.Fprintf(w, "  instance profile  %s (role %s)\n", st.InstanceProfile, nc.Spec.Role)
}

// amiRequirements summarises the instance types an AMI suits, e.g.
// "arch=arm64" or "arch=amd64, no GPU".
func amiRequirements(reqs []corev1.NodeSelectorRequirement) string {
	parts := make([]string, 0, len(reqs))
	for _, r := range reqs {
		key := r.Key
		if i := strings.LastIndex(key, "/"); i >= 0 {
			key = key[i+1:]
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			parts = append(parts, key+"="+strings.Join(r.Values, "|"))
		case corev1.NodeSelectorOpNotIn:
			parts = append(parts, key+"!="+strings.Join(r.Values, "|"))
		case corev1.NodeSelectorOpExists:
			parts = append(parts, key)
		case corev1.NodeSelectorOpDoesNotExist:
			parts = append(parts, "no "+key)
		default:
			parts = append(parts, fmt.Sprintf("%s %s %s", key, r.Operator, strings.Join(r.Values, "|")))
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// instanceColumns returns, for each node name, its EC2 instance id and AMI
// id, from the NodeClaims' status and, failing that, the endpoint.
func (s *story) instanceColumns(ctx context.Context) (map[string][2]string, error) {
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	images := map[string]string{}
	for _, in := range s.ec2.server.EC2().Instances() {
		images[in.ID] = in.ImageID
	}
	cols := map[string][2]string{}
	for _, nc := range claims.Items {
		if nc.Status.NodeName == "" {
			continue
		}
		id := instanceID(nc.Status.ProviderID)
		image := nc.Status.ImageID
		if image == "" {
			image = images[id]
		}
		cols[nc.Status.NodeName] = [2]string{id, image}
	}
	return cols, nil
}

// orphans returns the instances pending or running that no NodeClaim names.
func (s *story) orphans(ctx context.Context) (running []ec2.Instance, orphans []string, err error) {
	claims := &v1.NodeClaimList{}
	if err := s.cluster.Client.List(ctx, claims); err != nil {
		return nil, nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	claimed := map[string]bool{}
	for _, nc := range claims.Items {
		claimed[instanceID(nc.Status.ProviderID)] = true
	}
	running = s.ec2.running()
	for _, in := range running {
		if !claimed[in.ID] {
			orphans = append(orphans, in.ID)
		}
	}
	return running, orphans, nil
}

// cleanupEC2 checks that every running instance backs a NodeClaim, then
// removes the workloads and the NodePool, as a user ends a trial, and
// follows Dovetail terminating every instance.
func (s *story) cleanupEC2(ctx context.Context) error {
	c := s.cluster.Client
	running, orphans, err := s.orphans(ctx)
	if err != nil {
		return err
	}
	if len(orphans) > 0 {
		return fmt.Errorf("instances %s run without a NodeClaim", strings.Join(orphans, ", "))
	}
	fmt.Fprintf(s.out, "\nCleanup  %d EC2 instances run, each the instance of a NodeClaim. Deleting the workloads and\n", len(running))
	fmt.Fprintln(s.out, "  the NodePool (kubectl delete deploy,pdb --all -n demo; kubectl delete nodepool default):")
	fmt.Fprintln(s.out, "  Dovetail drains and deletes its NodeClaims and terminates their instances.")
	s.ec2.observe()
	for _, w := range workloads() {
		if err := c.Delete(ctx, w.deployment()); err != nil {
			return fmt.Errorf("deleting deployment %s: %w", w.name, err)
		}
	}
	if err := c.Delete(ctx, apiPDB()); err != nil {
		return fmt.Errorf("deleting the api PodDisruptionBudget: %w", err)
	}
	np := localcluster.DefaultAWSNodePool()
	if err := c.Delete(ctx, np); err != nil {
		return fmt.Errorf("deleting NodePool %s: %w", np.Name, err)
	}
	began := s.clock.Now()
	err = s.until(ctx, func(ctx context.Context) (bool, error) {
		s.ec2.narrate(s.out, s.since(began))
		claims := &v1.NodeClaimList{}
		if err := c.List(ctx, claims); err != nil {
			return false, err
		}
		return len(claims.Items) == 0 && len(s.ec2.running()) == 0, nil
	})
	if err != nil {
		left := s.ec2.running()
		ids := make([]string, 0, len(left))
		for _, in := range left {
			ids = append(ids, in.ID)
		}
		return fmt.Errorf("waiting for every instance to terminate (still running: %s): %w", strings.Join(ids, ", "), err)
	}
	s.summary.InstancesLeftRunning = len(s.ec2.running())
	fmt.Fprintf(s.out, "Every NodeClaim is gone and no EC2 instance is left pending or running (%s).\n", s.since(began))
	return nil
}

// printEC2Summary closes the summary with the EC2NodeClass's status and the
// instances launched and terminated.
func (s *story) printEC2Summary(ctx context.Context) error {
	var nc awsv1.EC2NodeClass
	if err := s.cluster.Client.Get(ctx, client.ObjectKey{Name: localcluster.DefaultName}, &nc); err != nil {
		return fmt.Errorf("reading EC2NodeClass %s: %w", localcluster.DefaultName, err)
	}
	ready := "Ready condition missing"
	if c := meta.FindStatusCondition(nc.Status.Conditions, awsv1.ConditionTypeReady); c != nil {
		ready = fmt.Sprintf("Ready=%s", c.Status)
		if c.Reason != "" && c.Status != "True" {
			ready += " (" + c.Reason + ")"
		}
	}
	fmt.Fprintf(s.out, "  EC2NodeClass     %s %s: %d subnets, %d security groups, %d AMIs, instance profile %s\n",
		nc.Name, ready, len(nc.Status.Subnets), len(nc.Status.SecurityGroups), len(nc.Status.AMIs), nc.Status.InstanceProfile)
	s.ec2.observe()
	used := make([]string, 0, len(s.ec2.images))
	for _, a := range nc.Status.AMIs {
		if n := s.ec2.images[a.ID]; n > 0 {
			used = append(used, fmt.Sprintf("%s (%s) x%d", a.ID, a.Name, n))
		}
	}
	fmt.Fprintf(s.out, "  AMIs booted      %s\n", strings.Join(used, ", "))
	s.summary.InstancesLaunched, s.summary.InstancesTerminated = len(s.ec2.launched), len(s.ec2.terminated)
	left := len(s.ec2.running())
	fmt.Fprintf(s.out, "  EC2 instances    %d launched, %d terminated, %d left running at %s\n",
		s.summary.InstancesLaunched, s.summary.InstancesTerminated, left, s.ec2.server.URL())
	if left > 0 {
		return errors.New("instances were left running after the cleanup")
	}
	return nil
}
