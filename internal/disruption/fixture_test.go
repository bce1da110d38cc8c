package disruption_test

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

// now is the decision time of every test: Monday 6 January 2025, 12:00 UTC.
var now = time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

const (
	zoneA = "zone-a"
	zoneB = "zone-b"
)

// instanceType is a type with cpu cores and 2 GiB per core, offered
// on-demand at price and spot at 70% of it, in two zones.
func instanceType(name string, cpu int, price float64) *cloudprovider.InstanceType {
	w := dtesting.MakeInstanceType(name).CPU(fmt.Sprint(cpu)).Memory(fmt.Sprintf("%dGi", 2*cpu)).Pods("110")
	for _, z := range []string{zoneA, zoneB} {
		w = w.Offering(z, v1.CapacityTypeOnDemand, price, true).Offering(z, v1.CapacityTypeSpot, 0.7*price, true)
	}
	return w.Obj()
}

// catalog: small (2 cpu, $0.10/h), medium (4, $0.20), large (8, $0.40).
func catalog() []*cloudprovider.InstanceType {
	return []*cloudprovider.InstanceType{
		instanceType("small", 2, 0.10), instanceType("medium", 4, 0.20), instanceType("large", 8, 0.40),
	}
}

// poolWrapper builds a Ready NodePool for decisions.
type poolWrapper struct{ np *v1.NodePool }

// makePool returns a Ready pool consolidating WhenEmptyOrUnderutilized
// after 30s, with an unlimited budget (100%), nodes that never expire, and
// the hash annotations the hash controller would add.
func makePool(name string) *poolWrapper {
	np := dtesting.MakeNodePool(name).Obj()
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("30s"),
		Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
	}
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	np.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	return &poolWrapper{np: np}
}

func (w *poolWrapper) policy(p v1.ConsolidationPolicy) *poolWrapper {
	w.np.Spec.Disruption.ConsolidationPolicy = p
	return w
}

func (w *poolWrapper) consolidateAfter(d string) *poolWrapper {
	w.np.Spec.Disruption.ConsolidateAfter = v1.MustParseNillableDuration(d)
	return w
}

func (w *poolWrapper) budgets(bs ...v1.Budget) *poolWrapper {
	w.np.Spec.Disruption.Budgets = bs
	return w
}

func (w *poolWrapper) req(key string, op corev1.NodeSelectorOperator, values ...string) *poolWrapper {
	w.np.Spec.Template.Spec.Requirements = append(w.np.Spec.Template.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	return w
}

func (w *poolWrapper) obj() *v1.NodePool { return w.np.DeepCopy() }

func budget(nodes string, reasons ...v1.DisruptionReason) v1.Budget {
	b := v1.Budget{Nodes: intstr.Parse(nodes), Reasons: reasons}
	return b
}

func scheduled(nodes, schedule string, d time.Duration, reasons ...v1.DisruptionReason) v1.Budget {
	b := budget(nodes, reasons...)
	b.Schedule = &schedule
	b.Duration = &metav1.Duration{Duration: d}
	return b
}

// nodeWrapper builds a registered, initialized, Ready machine of a pool:
// Node and NodeClaim, created two hours before now, initialized an hour
// before now.
type nodeWrapper struct{ n *machine.Machine }

func makeNode(name string, pool *v1.NodePool, it *cloudprovider.InstanceType, zone, capacityType string) *nodeWrapper {
	labels := map[string]string{
		corev1.LabelHostname: name, corev1.LabelTopologyZone: zone, v1.CapacityTypeLabelKey: capacityType,
		corev1.LabelInstanceTypeStable: it.Name, v1.NodePoolLabelKey: pool.Name, v1.NodeInitializedLabelKey: "true",
		v1.NodeRegisteredLabelKey: "true", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
	}
	created := metav1.NewTime(now.Add(-2 * time.Hour))
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: created, UID: types.UID("node-" + name)},
		Spec:       corev1.NodeSpec{ProviderID: "fake://" + name},
		Status: corev1.NodeStatus{
			Capacity: it.Capacity, Allocatable: it.Allocatable(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	claimLabels := map[string]string{}
	for k, v := range labels {
		if k != corev1.LabelHostname && k != v1.NodeInitializedLabelKey && k != v1.NodeRegisteredLabelKey {
			claimLabels[k] = v
		}
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: claimLabels, CreationTimestamp: created, UID: types.UID("claim-" + name),
			Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey:        nodepoolutil.TemplateHash(pool),
				v1.NodePoolHashVersionAnnotationKey: nodepoolutil.HashVersion,
			},
		},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: *pool.Spec.Template.Spec.DeepCopy()},
		Status: v1.NodeClaimStatus{
			NodeName: name, ProviderID: "fake://" + name,
			Conditions: []metav1.Condition{
				{Type: v1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))},
			},
		},
	}
	return &nodeWrapper{n: &machine.Machine{Node: node, NodeClaim: nc}}
}

// pods binds pods to the node.
func (w *nodeWrapper) pods(pods ...*corev1.Pod) *nodeWrapper {
	for _, p := range pods {
		p.Spec.NodeName = w.n.Node.Name
		p.Status.Phase = corev1.PodRunning
		w.n.Pods = append(w.n.Pods, p)
	}
	return w
}

// lastPodEvent sets the NodeClaim's lastPodEventTime to now - ago.
func (w *nodeWrapper) lastPodEvent(ago time.Duration) *nodeWrapper {
	w.n.NodeClaim.Status.LastPodEventTime = metav1.NewTime(now.Add(-ago))
	return w
}

// drifted sets the Drifted condition, drifted ago.
func (w *nodeWrapper) drifted(ago time.Duration) *nodeWrapper {
	w.n.NodeClaim.Status.Conditions = append(w.n.NodeClaim.Status.Conditions, metav1.Condition{
		Type: v1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: disruption.DriftReasonNodePool,
		LastTransitionTime: metav1.NewTime(now.Add(-ago)),
	})
	return w
}

func (w *nodeWrapper) annotateNode(k, v string) *nodeWrapper {
	w.n.Node.Annotations = map[string]string{k: v}
	return w
}

func (w *nodeWrapper) notInitialized() *nodeWrapper {
	delete(w.n.Node.Labels, v1.NodeInitializedLabelKey)
	w.n.NodeClaim.Status.Conditions = nil
	return w
}

func (w *nodeWrapper) notReady() *nodeWrapper {
	w.n.Node.Status.Conditions[0].Status = corev1.ConditionFalse
	return w
}

func (w *nodeWrapper) marked() *nodeWrapper {
	w.n.MarkedForDeletion = true
	return w
}

func (w *nodeWrapper) nominated(until time.Time) *nodeWrapper {
	w.n.NominatedUntil = until
	return w
}

// expireAfter sets the claim's expireAfter.
func (w *nodeWrapper) expireAfter(d string) *nodeWrapper {
	w.n.NodeClaim.Spec.ExpireAfter = v1.MustParseNillableDuration(d)
	return w
}

func (w *nodeWrapper) obj() *machine.Machine { return w.n }

// pod is a running replica of app requesting cpu and 256Mi per 250m.
func pod(name, app, cpu string) *corev1.Pod {
	q := resource.MustParse(cpu)
	mem := resource.NewQuantity(q.MilliValue()*1024*1024, resource.BinarySI)
	p := dtesting.MakePod(name).Label("app", app).Req("cpu", cpu).Req("memory", mem.String()).Obj()
	p.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	return p
}

func annotate(p *corev1.Pod, k, v string) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}

func pdb(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
}

// input assembles an Input at now with the pools (all offering the catalog
// unless types are given) and nodes.
func input(pools []*v1.NodePool, nodes ...*machine.Machine) disruption.Input {
	in := disruption.Input{Now: now, Nodes: nodes}
	for _, np := range pools {
		in.NodePools = append(in.NodePools, simulator.NodePool{NodePool: np, InstanceTypes: catalog()})
	}
	return in
}

// summary is what the tables compare of a command.
type summary struct {
	Method       disruption.Method
	Reason       v1.DisruptionReason
	Decision     disruption.Decision
	Candidates   []string
	Replacements []string // "<cheapest type>/<capacity types>"
}

func summarize(cmd *disruption.Command) *summary {
	if cmd == nil {
		return nil
	}
	s := &summary{Method: cmd.Method, Reason: cmd.Reason, Decision: cmd.Decision()}
	for _, c := range cmd.Candidates {
		s.Candidates = append(s.Candidates, c.Name())
	}
	for _, r := range cmd.Replacements {
		ct := "any"
		if req, ok := r.Claim.Requirements.Get(v1.CapacityTypeLabelKey); ok {
			ct = fmt.Sprint(req.Values())
		}
		s.Replacements = append(s.Replacements, r.Claim.InstanceTypes[0].Name+"/"+ct)
	}
	return s
}
