package conversion

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// v1beta1Claim returns a v1beta1 NodeClaim of NodePool "np-a"; edit changes it.
func v1beta1Claim(edit func(*v1beta1.NodeClaim)) *v1beta1.NodeClaim {
	nc := &v1beta1.NodeClaim{
		TypeMeta:   typeMeta(v1beta1.SchemeGroupVersion, "NodeClaim"),
		ObjectMeta: metav1.ObjectMeta{Name: "np-a-x7k2p", Labels: map[string]string{v1.NodePoolLabelKey: "np-a"}},
		Spec: v1beta1.NodeClaimSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
			Resources:    v1beta1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
			NodeClassRef: &v1beta1.NodeClassReference{Name: "default", Kind: "EC2NodeClass", APIVersion: "karpenter.k8s.aws/v1beta1"},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

// v1Claim returns the v1 NodeClaim v1beta1Claim(nil) converts to with
// testNodePools; edit changes it.
func v1Claim(edit func(*v1.NodeClaim)) *v1.NodeClaim {
	nc := &v1.NodeClaim{
		TypeMeta:   typeMeta(v1.SchemeGroupVersion, "NodeClaim"),
		ObjectMeta: metav1.ObjectMeta{Name: "np-a-x7k2p", Labels: map[string]string{v1.NodePoolLabelKey: "np-a"}},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
				Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
				NodeClassRef: &v1.NodeClassReference{Name: "default", Kind: "EC2NodeClass", Group: "karpenter.k8s.aws"},
				ExpireAfter:  duration("24h"),
			},
			Resources: v1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

func failingNodePools(err error) NodePoolGetter {
	return NodePoolGetterFunc(func(context.Context, string) (*v1.NodePool, error) { return nil, err })
}

func TestNodeClaimToV1(t *testing.T) {
	t.Parallel()
	lastPodEvent := metav1.NewTime(time.Date(2024, 2, 2, 19, 54, 34, 0, time.UTC))
	cases := map[string]struct {
		in        *v1beta1.NodeClaim
		nodePools NodePoolGetter
		want      *v1.NodeClaim
		wantErr   string
	}{
		"expireAfter comes from the owning NodePool": {
			in:   v1beta1Claim(nil),
			want: v1Claim(nil),
		},
		"expireAfter Never from the NodePool": {
			in: v1beta1Claim(func(nc *v1beta1.NodeClaim) { nc.Labels[v1.NodePoolLabelKey] = "np-b" }),
			want: v1Claim(func(nc *v1.NodeClaim) {
				nc.Labels[v1.NodePoolLabelKey] = "np-b"
				nc.Spec.ExpireAfter = duration("Never")
			}),
		},
		"a missing NodePool gives the CRD default": {
			in: v1beta1Claim(func(nc *v1beta1.NodeClaim) { nc.Labels[v1.NodePoolLabelKey] = "gone" }),
			want: v1Claim(func(nc *v1.NodeClaim) {
				nc.Labels[v1.NodePoolLabelKey] = "gone"
				nc.Spec.ExpireAfter = duration("720h")
			}),
		},
		"a NotFound error is a missing NodePool": {
			in:        v1beta1Claim(nil),
			nodePools: failingNodePools(apierrors.NewNotFound(schema.GroupResource{Group: "karpenter.sh", Resource: "nodepools"}, "np-a")),
			want:      v1Claim(func(nc *v1.NodeClaim) { nc.Spec.ExpireAfter = duration("720h") }),
		},
		"no nodepool label gives the CRD default": {
			in:   v1beta1Claim(func(nc *v1beta1.NodeClaim) { nc.Labels = nil }),
			want: v1Claim(func(nc *v1.NodeClaim) { nc.Labels = nil; nc.Spec.ExpireAfter = duration("720h") }),
		},
		"a failing lookup is an error": {
			in:        v1beta1Claim(nil),
			nodePools: failingNodePools(errors.New("connection refused")),
			wantErr:   `converting NodeClaim "np-a-x7k2p" to v1: getting NodePool "np-a": connection refused`,
		},
		"a kept expireAfter wins over the NodePool, and needs no lookup": {
			in: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Annotations = map[string]string{V1FieldsAnnotationKey: `{"expireAfter":"1h","terminationGracePeriod":"30m0s","lastPodEventTime":"2024-02-02T19:54:34Z"}`}
			}),
			nodePools: failingNodePools(errors.New("connection refused")),
			want: v1Claim(func(nc *v1.NodeClaim) {
				nc.Spec.ExpireAfter = duration("1h")
				nc.Spec.TerminationGracePeriod = gracePeriod(30 * time.Minute)
				nc.Status.LastPodEventTime = lastPodEvent
			}),
		},
		"kubelet and a short reference go into annotations": {
			in: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Spec.Kubelet = &v1beta1.KubeletConfiguration{PodsPerCore: ptr.To[int32](2)}
				nc.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "default"}
			}),
			want: v1Claim(func(nc *v1.NodeClaim) {
				nc.Annotations = map[string]string{
					v1.KubeletCompatibilityAnnotationKey: `{"podsPerCore":2}`,
					v1.NodeClassReferenceAnnotationKey:   `{"name":"default"}`,
				}
			}),
		},
		"status is copied": {
			in: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Status = v1beta1.NodeClaimStatus{
					NodeName: "ip-10-0-0-1", ProviderID: "aws:///us-west-2a/i-1", ImageID: "ami-1",
					Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")},
					Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")},
					Conditions:  []metav1.Condition{{Type: "Launched", Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: lastPodEvent}},
				}
			}),
			want: v1Claim(func(nc *v1.NodeClaim) {
				nc.Status = v1.NodeClaimStatus{
					NodeName: "ip-10-0-0-1", ProviderID: "aws:///us-west-2a/i-1", ImageID: "ami-1",
					Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")},
					Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("29")},
					Conditions:  []metav1.Condition{{Type: "Launched", Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: lastPodEvent}},
				}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &Converter{NodePools: testNodePools()}
			if tc.nodePools != nil {
				c.NodePools = tc.nodePools
			}
			got, err := c.NodeClaimToV1(context.Background(), tc.in)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("NodeClaimToV1() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeClaimToV1beta1(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in        *v1.NodeClaim
		nodePools NodePoolGetter
		want      *v1beta1.NodeClaim
	}{
		"expireAfter equal to the NodePool's needs no annotation": {
			in:   v1Claim(nil),
			want: v1beta1Claim(nil),
		},
		"expireAfter that differs from the NodePool's is kept": {
			in: v1Claim(func(nc *v1.NodeClaim) { nc.Spec.ExpireAfter = duration("720h") }),
			want: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Annotations = map[string]string{V1FieldsAnnotationKey: `{"expireAfter":"720h"}`}
			}),
		},
		"expireAfter is kept when the NodePool cannot be read": {
			in:        v1Claim(nil),
			nodePools: failingNodePools(errors.New("connection refused")),
			want: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Annotations = map[string]string{V1FieldsAnnotationKey: `{"expireAfter":"24h"}`}
			}),
		},
		"terminationGracePeriod and lastPodEventTime are kept": {
			in: v1Claim(func(nc *v1.NodeClaim) {
				nc.Spec.TerminationGracePeriod = gracePeriod(time.Hour)
				nc.Status.LastPodEventTime = metav1.NewTime(time.Date(2024, 2, 2, 19, 54, 34, 0, time.UTC))
			}),
			want: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Annotations = map[string]string{V1FieldsAnnotationKey: `{"terminationGracePeriod":"1h0m0s","lastPodEventTime":"2024-02-02T19:54:34Z"}`}
			}),
		},
		"kubelet and reference come back from their annotations": {
			in: v1Claim(func(nc *v1.NodeClaim) {
				nc.Annotations = map[string]string{
					v1.KubeletCompatibilityAnnotationKey: `{"podsPerCore":2}`,
					v1.NodeClassReferenceAnnotationKey:   `{"name":"default"}`,
				}
			}),
			want: v1beta1Claim(func(nc *v1beta1.NodeClaim) {
				nc.Spec.Kubelet = &v1beta1.KubeletConfiguration{PodsPerCore: ptr.To[int32](2)}
				nc.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "default"}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := &Converter{NodePools: testNodePools()}
			if tc.nodePools != nil {
				c.NodePools = tc.nodePools
			}
			got, err := c.NodeClaimToV1beta1(context.Background(), tc.in)
			checkErr(t, err, "")
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("NodeClaimToV1beta1() (-want +got):\n%s", diff)
			}
		})
	}
}
