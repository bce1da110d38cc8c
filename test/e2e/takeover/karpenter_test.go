package takeover_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// The objects below are shaped as Karpenter v1.14 with its kwok provider
// leaves them once its nodes have launched, registered and initialized.

// instanceType is the one Karpenter kwok type the test's NodePools allow.
const instanceType = "c-4x-amd64-linux"

// karpenterNodeClass is the KWOKNodeClass Karpenter's kwok provider reads.
func karpenterNodeClass() *kwokv1alpha1.KWOKNodeClass {
	return &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
}

// karpenterNodePool is a v1 NodePool written for Karpenter's kwok provider.
func karpenterNodePool(name, consolidateAfter, expireAfter string) *v1.NodePool {
	return &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "platform"}},
				Spec: v1.NodeClaimTemplateSpec{
					NodeClassRef: &v1.NodeClassReference{Group: kwokv1alpha1.Group, Kind: "KWOKNodeClass", Name: "default"},
					Requirements: []v1.NodeSelectorRequirementWithMinValues{
						{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
						{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{v1.CapacityTypeOnDemand}},
						{Key: kwok.InstanceFamilyLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"c"}},
					},
					ExpireAfter: v1.MustParseNillableDuration(expireAfter),
				},
			},
			Disruption: v1.Disruption{
				ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized,
				ConsolidateAfter:    v1.MustParseNillableDuration(consolidateAfter),
				Budgets:             []v1.Budget{{Nodes: intstr.FromString("100%")}},
			},
		},
	}
}

// machine is one NodeClaim and its Node as Karpenter made them.
type machine struct {
	claim *v1.NodeClaim
	node  *corev1.Node
}

// karpenterMachine creates, in the API server, a NodeClaim of the pool and
// its kwok Node as Karpenter v1.14 leaves them after launch, registration
// and initialization, and waits until kwok reports the Node Ready.
func karpenterMachine(t *testing.T, pool *v1.NodePool, suffix, zone string) machine {
	t.Helper()
	ctx := context.Background()
	claimName := pool.Name + "-" + suffix
	nodeName := "kwok-" + claimName + "-" + suffix + "-" + fmt.Sprint(len(suffix)*1000003)
	// Labels Karpenter's kwok Create returns and the lifecycle copies onto
	// the claim: the claim's own, its single-value requirements, the
	// instance type's, the offering's, and kwok's bookkeeping.
	labels := map[string]string{
		"team":                              "platform",
		v1.NodePoolLabelKey:                 pool.Name,
		corev1.LabelInstanceTypeStable:      instanceType,
		corev1.LabelArchStable:              "amd64",
		corev1.LabelOSStable:                "linux",
		corev1.LabelTopologyZone:            zone,
		v1.CapacityTypeLabelKey:             v1.CapacityTypeOnDemand,
		kwok.InstanceFamilyLabelKey:         "c",
		kwok.InstanceSizeLabelKey:           "4",
		kwok.InstanceCPULabelKey:            "4",
		kwok.InstanceMemoryLabelKey:         "8Gi",
		"eks-node-viewer/instance-price":    "0.108590",
		kwok.KarpenterKWOKPartitionLabelKey: "a",
		"kwok.x-k8s.io/node":                "fake",
	}
	annotations := map[string]string{
		v1.NodePoolHashAnnotationKey:        nodepoolutil.TemplateHash(pool),
		v1.NodePoolHashVersionAnnotationKey: "v3",
		"kwok.x-k8s.io/node":                "fake",
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourceMemory: resource.MustParse("8182Mi"),
		corev1.ResourcePods: resource.MustParse("64"), corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
	// Karpenter's kwok provider gives the Node the claim's requests as its
	// capacity, and the instance type's allocatable.
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourcePods: resource.MustParse("1")}

	claim := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: claimName, Labels: copyMap(labels), Annotations: annotations,
			Finalizers: []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodePool", Name: pool.Name, UID: pool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
				Requirements: append([]v1.NodeSelectorRequirementWithMinValues{
					{Key: v1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.Name}},
					{Key: "team", Operator: corev1.NodeSelectorOpIn, Values: []string{"platform"}},
				}, pool.Spec.Template.Spec.Requirements...),
				NodeClassRef: pool.Spec.Template.Spec.NodeClassRef,
				ExpireAfter:  pool.Spec.Template.Spec.ExpireAfter,
			},
			Resources: v1.ResourceRequirements{Requests: requests},
		},
	}
	create(t, claim)
	now := metav1.Now()
	condition := func(kind, reason string) metav1.Condition {
		return metav1.Condition{Type: kind, Status: metav1.ConditionTrue, Reason: reason, LastTransitionTime: now, ObservedGeneration: claim.Generation}
	}
	claim.Status = v1.NodeClaimStatus{
		ProviderID: kwok.ProviderIDPrefix + nodeName, NodeName: nodeName,
		Capacity: requests, Allocatable: allocatable,
		Conditions: []metav1.Condition{
			condition(v1.ConditionTypeLaunched, v1.ConditionTypeLaunched),
			condition(v1.ConditionTypeRegistered, v1.ConditionTypeRegistered),
			condition(v1.ConditionTypeInitialized, v1.ConditionTypeInitialized),
			condition(v1.ConditionTypeReady, v1.ConditionTypeReady),
		},
	}
	if err := testEnv.Client.Status().Update(ctx, claim); err != nil {
		t.Fatalf("writing the status of NodeClaim %s: %v", claim.Name, err)
	}

	nodeLabels := copyMap(labels)
	nodeLabels[corev1.LabelHostname] = claimName
	nodeLabels[v1.NodeRegisteredLabelKey] = "true"
	nodeLabels[v1.NodeInitializedLabelKey] = "true"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: nodeName, Labels: nodeLabels, Annotations: copyMap(annotations),
			Finalizers: []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1.SchemeGroupVersion.String(), Kind: "NodeClaim", Name: claim.Name, UID: claim.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		// The karpenter.sh/unregistered taint is gone: Karpenter removed it
		// at registration.
		Spec: corev1.NodeSpec{ProviderID: kwok.ProviderIDPrefix + nodeName},
		Status: corev1.NodeStatus{
			Capacity: requests, Allocatable: allocatable,
			NodeInfo: corev1.NodeSystemInfo{Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
	create(t, node)
	// Ready is not enough: the API server's TaintNodesByCondition admission
	// gives a new Node node.kubernetes.io/not-ready:NoSchedule, and the
	// node-lifecycle controller removes it some seconds after kwok reports
	// Ready. A workload created before then is placed by the kube-scheduler
	// on another machine, and the test's placement is not what it meant.
	env.Eventually(t, time.Minute, "node "+nodeName+" Ready and schedulable", func(ctx context.Context) (bool, error) {
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, err
		}
		if slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	return machine{claim: claim, node: node}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := testEnv.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s: %v", env.Describe(obj), err)
	}
}
