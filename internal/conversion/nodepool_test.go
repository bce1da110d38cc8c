package conversion

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

func duration(s string) v1.NillableDuration { return v1.MustParseNillableDuration(s) }

func metaDuration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func gracePeriod(d time.Duration) *v1.Duration { g := v1.NewDuration(d); return &g }

// v1beta1Pool returns a minimal valid v1beta1 NodePool; edit changes it.
func v1beta1Pool(edit func(*v1beta1.NodePool)) *v1beta1.NodePool {
	np := &v1beta1.NodePool{
		TypeMeta:   typeMeta(v1beta1.SchemeGroupVersion, "NodePool"),
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1beta1.NodePoolSpec{
			Template: v1beta1.NodeClaimTemplate{Spec: v1beta1.NodeClaimSpec{
				NodeClassRef: &v1beta1.NodeClassReference{Name: "default", Kind: "EC2NodeClass", APIVersion: "karpenter.k8s.aws/v1beta1"},
			}},
			Disruption: v1beta1.Disruption{ConsolidationPolicy: v1beta1.ConsolidationPolicyWhenUnderutilized, ExpireAfter: duration("720h")},
		},
	}
	if edit != nil {
		edit(np)
	}
	return np
}

// v1Pool returns the v1 NodePool that v1beta1Pool(nil) converts to; edit changes it.
func v1Pool(edit func(*v1.NodePool)) *v1.NodePool {
	np := &v1.NodePool{
		TypeMeta:   typeMeta(v1.SchemeGroupVersion, "NodePool"),
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1.NodePoolSpec{
			Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Name: "default", Kind: "EC2NodeClass", Group: "karpenter.k8s.aws"},
				ExpireAfter:  duration("720h"),
			}},
			Disruption: v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: duration("0s")},
		},
	}
	if edit != nil {
		edit(np)
	}
	return np
}

func TestNodePoolToV1(t *testing.T) {
	t.Parallel()
	kubelet := &v1beta1.KubeletConfiguration{MaxPods: ptr.To[int32](20), ClusterDNS: []string{"10.0.1.100"}}
	cases := map[string]struct {
		in        *v1beta1.NodePool
		converter Converter
		want      *v1.NodePool
		wantErr   string
	}{
		"metadata, weight, limits and template are copied": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Labels = map[string]string{"team": "a"}
				np.Annotations = map[string]string{"note": "x", v1.StoredVersionMigratedAnnotationKey: "true"}
				np.Spec.Weight = ptr.To[int32](10)
				np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("1k")}
				np.Spec.Template.ObjectMeta = v1.ObjectMeta{Labels: map[string]string{"billing": "t"}, Annotations: map[string]string{"o": "t"}}
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
				np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoExecute}}
				np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5"}, MinValues: ptr.To(2)}}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Labels = map[string]string{"team": "a"}
				np.Annotations = map[string]string{"note": "x", v1.StoredVersionMigratedAnnotationKey: "true"}
				np.Spec.Weight = ptr.To[int32](10)
				np.Spec.Limits = v1.Limits{corev1.ResourceCPU: resource.MustParse("1k")}
				np.Spec.Template.ObjectMeta = v1.ObjectMeta{Labels: map[string]string{"billing": "t"}, Annotations: map[string]string{"o": "t"}}
				np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}
				np.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "s", Effect: corev1.TaintEffectNoExecute}}
				np.Spec.Template.Spec.Requirements = []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5"}, MinValues: ptr.To(2)}}
			}),
		},
		"expireAfter moves to the template and keeps its text": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Disruption.ExpireAfter = duration("10h") }),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.ExpireAfter = duration("10h")
			}),
		},
		"expireAfter Never": {
			in:   v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Disruption.ExpireAfter = duration("Never") }),
			want: v1Pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = duration("Never") }),
		},
		"WhenUnderutilized becomes WhenEmptyOrUnderutilized with consolidateAfter 0s": {
			in:   v1beta1Pool(nil),
			want: v1Pool(nil),
		},
		"WhenUnderutilized with consolidateAfter Never keeps Never": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Disruption.ConsolidateAfter = ptr.To(duration("Never")) }),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = duration("Never")
			}),
		},
		"an unset policy (the v1beta1 default) gets consolidateAfter 0s": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = "" }),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = ""
			}),
		},
		"WhenEmpty keeps its consolidateAfter": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.ConsolidateAfter = ptr.To(duration("30s"))
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption = v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: duration("30s")}
			}),
		},
		"budgets keep nodes, schedule and duration": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Disruption.Budgets = []v1beta1.Budget{{Nodes: intstr.FromString("10%")}, {Nodes: intstr.FromString("0"), Schedule: ptr.To("@daily"), Duration: metaDuration(10 * time.Minute)}}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("10%")}, {Nodes: intstr.FromString("0"), Schedule: ptr.To("@daily"), Duration: metaDuration(10 * time.Minute)}}
			}),
		},
		"kubelet goes into the kubelet-conversion annotation": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Template.Spec.Kubelet = kubelet }),
			want: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.KubeletCompatibilityAnnotationKey: `{"clusterDNS":["10.0.1.100"],"maxPods":20}`}
			}),
		},
		"a stale kubelet annotation is removed when there is no kubelet": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{v1.KubeletCompatibilityAnnotationKey: `{"maxPods":1}`}
			}),
			want: v1Pool(nil),
		},
		"a reference naming only the NodeClass gets default kind and group and is kept in the annotation": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "default"}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.NodeClassReferenceAnnotationKey: `{"name":"default"}`}
			}),
		},
		"apiVersion becomes group": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "k", Kind: "KWOKNodeClass", APIVersion: "karpenter.kwok.sh/v1alpha1"}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Name: "k", Kind: "KWOKNodeClass", Group: "karpenter.kwok.sh"}
			}),
		},
		"the default NodeClass comes from the converter": {
			converter: Converter{DefaultNodeClass: schema.GroupKind{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass"}},
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "k"}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.NodeClassReferenceAnnotationKey: `{"name":"k"}`}
				np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Name: "k", Kind: "KWOKNodeClass", Group: "karpenter.kwok.sh"}
			}),
		},
		"a nil reference stays nil": {
			in:   v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil }),
			want: v1Pool(func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil }),
		},
		"resources in the template are dropped": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			}),
			want: v1Pool(nil),
		},
		"status resources and conditions are copied": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Status = v1beta1.NodePoolStatus{
					Resources:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")},
					Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
				}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Status = v1.NodePoolStatus{
					Resources:  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")},
					Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
				}
			}),
		},
		"v1-fields restore reasons, terminationGracePeriod, status.nodes and the document spelling": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"disruption":{"consolidateAfter":"5m","consolidationPolicy":"WhenUnderutilized","budgets":[{"reasons":["Drifted","Expired"],"nodes":"0"}]},"terminationGracePeriod":"1h0m0s","nodes":4}`}
				np.Spec.Disruption.Budgets = []v1beta1.Budget{{Nodes: intstr.FromString("0")}}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption = v1.Disruption{
					ConsolidationPolicy: v1.ConsolidationPolicyWhenUnderutilized,
					ConsolidateAfter:    duration("5m"),
					Budgets:             []v1.Budget{{Nodes: intstr.FromString("0"), Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted, v1.DisruptionReasonExpired}}},
				}
				np.Spec.Template.Spec.TerminationGracePeriod = gracePeriod(time.Hour)
				np.Status.Nodes = ptr.To[int64](4)
			}),
		},
		"kept disruption is ignored once the v1beta1 budgets were edited": {
			in: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"disruption":{"consolidateAfter":"0s","consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[{"reasons":["Drifted"],"nodes":"0"}]}}`}
				np.Spec.Disruption.Budgets = []v1beta1.Budget{{Nodes: intstr.FromString("3")}}
			}),
			want: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("3")}}
			}),
		},
		"a v1-fields annotation that is not JSON is an error": {
			in:      v1beta1Pool(func(np *v1beta1.NodePool) { np.Annotations = map[string]string{V1FieldsAnnotationKey: "{"} }),
			wantErr: `converting NodePool "default" to v1: decoding annotation "compatibility.karpenter.sh/v1-fields": unexpected end of JSON input`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			before := tc.in.DeepCopy()
			got, err := tc.converter.NodePoolToV1(tc.in)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("NodePoolToV1() (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.in, cmpOptions()...); diff != "" {
				t.Errorf("NodePoolToV1() modified its input (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNodePoolToV1beta1(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in      *v1.NodePool
		want    *v1beta1.NodePool
		wantErr string
	}{
		"a plain pool needs no annotation": {
			in:   v1Pool(nil),
			want: v1beta1Pool(nil),
		},
		"template expireAfter moves to disruption": {
			in:   v1Pool(func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = duration("Never") }),
			want: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Disruption.ExpireAfter = duration("Never") }),
		},
		"WhenEmptyOrUnderutilized with a delay: v1beta1 cannot carry the delay, v1-fields keeps it": {
			in: v1Pool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = duration("10m") }),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"disruption":{"consolidateAfter":"10m","consolidationPolicy":"WhenEmptyOrUnderutilized"}}`}
			}),
		},
		"the document spelling WhenUnderutilized maps to v1beta1 WhenUnderutilized and is kept": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenUnderutilized
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"disruption":{"consolidateAfter":"0s","consolidationPolicy":"WhenUnderutilized"}}`}
			}),
		},
		"consolidateAfter Never survives as Never": {
			in: v1Pool(func(np *v1.NodePool) { np.Spec.Disruption.ConsolidateAfter = duration("Never") }),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Disruption.ConsolidateAfter = ptr.To(duration("Never"))
			}),
		},
		"WhenEmpty keeps consolidateAfter": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption = v1.Disruption{ConsolidationPolicy: v1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: duration("1m")}
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
				np.Spec.Disruption.ConsolidateAfter = ptr.To(duration("1m"))
			}),
		},
		"budget reasons are dropped from the budgets and kept in v1-fields": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Disruption.Budgets = []v1.Budget{{Nodes: intstr.FromString("0"), Schedule: ptr.To("@daily"), Duration: metaDuration(time.Hour), Reasons: []v1.DisruptionReason{v1.DisruptionReasonEmpty}}}
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Disruption.Budgets = []v1beta1.Budget{{Nodes: intstr.FromString("0"), Schedule: ptr.To("@daily"), Duration: metaDuration(time.Hour)}}
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"disruption":{"consolidateAfter":"0s","consolidationPolicy":"WhenEmptyOrUnderutilized","budgets":[{"reasons":["Empty"],"nodes":"0","schedule":"@daily","duration":"1h0m0s"}]}}`}
			}),
		},
		"terminationGracePeriod and status.nodes go to v1-fields": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.TerminationGracePeriod = gracePeriod(48 * time.Hour)
				np.Status.Nodes = ptr.To[int64](3)
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Annotations = map[string]string{V1FieldsAnnotationKey: `{"terminationGracePeriod":"48h0m0s","nodes":3}`}
			}),
		},
		"kubelet comes back from its annotation": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.KubeletCompatibilityAnnotationKey: `{"maxPods":20}`}
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.Kubelet = &v1beta1.KubeletConfiguration{MaxPods: ptr.To[int32](20)}
			}),
		},
		"a kubelet annotation that does not decode is an error": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.KubeletCompatibilityAnnotationKey: `{"maxPods":"many"}`}
			}),
			wantErr: `converting NodePool "default" to v1beta1: decoding annotation "compatibility.karpenter.sh/v1beta1-kubelet-conversion": json: cannot unmarshal string into Go struct field KubeletConfiguration.maxPods of type int32`,
		},
		"the kept reference is restored": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.NodeClassReferenceAnnotationKey: `{"name":"default"}`}
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "default"}
			}),
		},
		"a kept reference to another NodeClass is ignored": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Annotations = map[string]string{v1.NodeClassReferenceAnnotationKey: `{"name":"old"}`}
			}),
			want: v1beta1Pool(nil),
		},
		"a reference outside the known groups gets version v1": {
			in: v1Pool(func(np *v1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Name: "x", Kind: "Foo", Group: "example.com"}
			}),
			want: v1beta1Pool(func(np *v1beta1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: "x", Kind: "Foo", APIVersion: "example.com/v1"}
			}),
		},
		"a nil reference stays nil": {
			in:   v1Pool(func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil }),
			want: v1beta1Pool(func(np *v1beta1.NodePool) { np.Spec.Template.Spec.NodeClassRef = nil }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Converter{}).NodePoolToV1beta1(tc.in)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("NodePoolToV1beta1() (-want +got):\n%s", diff)
			}
		})
	}
}
