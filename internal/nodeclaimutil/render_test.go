package nodeclaimutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

func TestFromPlan(t *testing.T) {
	pool := &v1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "general", UID: "pool-uid"},
		Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{
			ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"example.com/owner": "platform"}},
			Spec: v1.NodeClaimTemplateSpec{
				NodeClassRef: &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Taints:       []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
				ExpireAfter:  v1.MustParseNillableDuration("720h"),
			},
		}},
	}
	zone, err := requirements.New(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-east-1a")
	if err != nil {
		t.Fatal(err)
	}
	types, err := requirements.New(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "m6i.large")
	if err != nil {
		t.Fatal(err)
	}
	hostname, err := requirements.New(corev1.LabelHostname, corev1.NodeSelectorOpIn, "planned-1")
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		relaxed bool
		want    map[string]string
	}{
		"plain":             {want: map[string]string{"example.com/owner": "platform", v1.NodePoolHashAnnotationKey: nodepoolutil.TemplateHash(pool), v1.NodePoolHashVersionAnnotationKey: nodepoolutil.HashVersion}},
		"minValues relaxed": {relaxed: true, want: map[string]string{"example.com/owner": "platform", v1.NodePoolHashAnnotationKey: nodepoolutil.TemplateHash(pool), v1.NodePoolHashVersionAnnotationKey: nodepoolutil.HashVersion, MinValuesRelaxedAnnotationKey: "true"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim := &simulator.NewNodeClaim{
				NodePool:         pool.Name,
				Requirements:     requirements.NewRequirements(zone, types, hostname),
				Requests:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")},
				MinValuesRelaxed: tc.relaxed,
			}
			nc := FromPlan(claim, pool)
			if diff := cmp.Diff(tc.want, nc.Annotations); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
			wantLabels := map[string]string{"team": "web", v1.NodePoolLabelKey: "general", corev1.LabelTopologyZone: "us-east-1a"}
			if diff := cmp.Diff(wantLabels, nc.Labels); diff != "" {
				t.Errorf("labels (-want +got; the planned hostname stays off):\n%s", diff)
			}
			if nc.GenerateName != "general-" || len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != pool.UID || !*nc.OwnerReferences[0].BlockOwnerDeletion {
				t.Errorf("name %q, owners %+v: want generateName general- and the pool as owner", nc.GenerateName, nc.OwnerReferences)
			}
			if diff := cmp.Diff([]string{v1.TerminationFinalizer}, nc.Finalizers); diff != "" {
				t.Errorf("finalizers (-want +got; a claim is created finalized, before anything can launch):\n%s", diff)
			}
			if diff := cmp.Diff(pool.Spec.Template.Spec.Taints, nc.Spec.Taints); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
			if got := nc.Spec.Resources.Requests.Cpu().String(); got != "1500m" {
				t.Errorf("cpu request %s, want 1500m", got)
			}
			if len(nc.Spec.Requirements) != 3 {
				t.Errorf("requirements %+v, want the claim's three", nc.Spec.Requirements)
			}
			if pool.Spec.Template.ObjectMeta.Labels[v1.NodePoolLabelKey] != "" {
				t.Error("FromPlan wrote into the pool's template labels")
			}
		})
	}
}
