package shadow_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/shadow"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// pool creates a Ready NodePool: on demand only, WhenEmptyOrUnderutilized
// at once, every node may be disrupted, nodes never expire.
func pool(t *testing.T, name string, weight int32, annotations map[string]string) *v1.NodePool {
	t.Helper()
	np := dtesting.MakeNodePool(name).Obj()
	np.Annotations = annotations
	if weight > 0 {
		np.Spec.Weight = &weight
	}
	np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration(v1.Never)
	np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{
		{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
	}
	np.Spec.Disruption = v1.Disruption{
		ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
		ConsolidateAfter:    v1.MustParseNillableDuration("0s"),
		Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
	}
	return testEnv.CreateReadyNodePool(t, np)
}

// node creates an initialized NodeClaim of the pool and its Ready Node,
// as the lifecycle controller and the kubelet would have, for one
// instance type in a zone, on demand.
func node(t *testing.T, cp *fake.CloudProvider, name string, np *v1.NodePool, typeName, zone string) (*v1.NodeClaim, *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{v1.NodePoolLabelKey: np.Name},
			Annotations: map[string]string{
				v1.NodePoolHashAnnotationKey: nodepoolutil.TemplateHash(np), v1.NodePoolHashVersionAnnotationKey: nodepoolutil.HashVersion,
			},
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: *np.Spec.Template.Spec.DeepCopy()},
	}
	nc.Spec.Requirements = append(nc.Spec.Requirements,
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{typeName}},
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}},
	)
	launched, err := cp.Create(ctx, nc)
	if err != nil {
		t.Fatalf("launching %s: %v", name, err)
	}
	nc.Labels = launched.Labels
	if err := testEnv.Client.Create(ctx, nc); err != nil {
		t.Fatalf("creating nodeclaim %s: %v", name, err)
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: maps.Clone(launched.Labels), Finalizers: []string{v1.TerminationFinalizer}},
		Spec:       corev1.NodeSpec{ProviderID: launched.Status.ProviderID},
	}
	n.Labels[corev1.LabelHostname] = name
	n.Labels[v1.NodeRegisteredLabelKey] = "true"
	n.Labels[v1.NodeInitializedLabelKey] = "true"
	if err := testEnv.Client.Create(ctx, n); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	n.Status.Capacity, n.Status.Allocatable = launched.Status.Capacity, launched.Status.Allocatable
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := testEnv.Client.Status().Update(ctx, n); err != nil {
		t.Fatalf("marking node %s ready: %v", name, err)
	}
	now := metav1.Now()
	nc.Status.ProviderID, nc.Status.NodeName = launched.Status.ProviderID, name
	nc.Status.Capacity, nc.Status.Allocatable = launched.Status.Capacity, launched.Status.Allocatable
	for _, c := range []string{v1.ConditionTypeLaunched, v1.ConditionTypeRegistered, v1.ConditionTypeInitialized, v1.ConditionTypeReady} {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: c, LastTransitionTime: now})
	}
	if err := testEnv.Client.Status().Update(ctx, nc); err != nil {
		t.Fatalf("initializing nodeclaim %s: %v", name, err)
	}
	return nc, n
}

// boundPod creates a running pod of a ReplicaSet (so that it can be
// rescheduled) bound to the node, requesting cpu.
func boundPod(t *testing.T, ns, name, nodeName, cpu string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, UID: types.UID(name + "-rs"), Controller: new(true),
		}}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "main", Image: env.PauseImage,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	if err := testEnv.Client.Create(context.Background(), pod); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := testEnv.Client.Status().Update(context.Background(), pod); err != nil {
		t.Fatalf("marking pod %s running: %v", name, err)
	}
	return pod
}

// pendingPod creates a pod the kube-scheduler could not place, requesting
// cpu, with a node selector.
func pendingPod(t *testing.T, ns, name, cpu string, selector map[string]string) *corev1.Pod {
	t.Helper()
	return testEnv.CreatePendingPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	})
}

// versions are the resource versions of every pod, Node, NodeClaim and
// NodePool, by kind and name: any write changes them.
func versions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for kind, list := range map[string]client.ObjectList{"Pod": &corev1.PodList{}, "Node": &corev1.NodeList{}, "NodeClaim": &v1.NodeClaimList{}, "NodePool": &v1.NodePoolList{}} {
		got, err := env.ResourceVersions(context.Background(), testEnv.Client, list)
		if err != nil {
			t.Fatal(err)
		}
		for name, rv := range got {
			out[kind+" "+name] = rv
		}
	}
	return out
}

// gauge reads a metric family's value for the labels (false when the
// series does not exist).
func gauge(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, labels) {
				if f.GetType() == dto.MetricType_COUNTER {
					return m.GetCounter().GetValue(), true
				}
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func matches(m *dto.Metric, labels map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range labels {
		if got[k] != v {
			return false
		}
	}
	return true
}

// dump logs the shadow metrics and the events about the named objects,
// for a failed test.
func dump(t *testing.T, reg prometheus.Gatherer, recorder *env.EventLog, names []string) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Log(err)
	}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "dovetail_shadow_") || strings.HasPrefix(f.GetName(), "karpenter_voluntary_disruption_eligible") {
			for _, m := range f.GetMetric() {
				t.Logf("metric %s %v gauge=%v counter=%v", f.GetName(), m.GetLabel(), m.GetGauge().GetValue(), m.GetCounter().GetValue())
			}
		}
	}
	for _, name := range names {
		for _, reason := range []string{shadow.ReasonLaunch, shadow.ReasonNominated, shadow.ReasonFailedScheduling, shadow.ReasonDisrupt,
			"DisruptionBlocked", "Nominated", "FailedScheduling", "Unconsolidatable"} {
			for _, msg := range recorder.Messages(reason, name) {
				t.Logf("event %s %s: %s", reason, name, msg)
			}
		}
	}
}
