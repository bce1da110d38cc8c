// Package nodeclaimutil is the one place that turns a claim the simulator
// planned, plus its NodePool, into the NodeClaim Dovetail creates.
// Provisioning, disruption's replacements and `dovetail simulate` all render
// through it, so that every NodeClaim carries the same labels, annotations,
// drift hash and owner whichever path launched it.
package nodeclaimutil

import (
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// ReplacesAnnotationKey is set on a replacement NodeClaim to the names of
// the NodeClaims it replaces (comma-separated), so that a restarted
// controller finds its disruption command again, and so that a static
// NodePool counts the replacement, not the claim it replaces.
const ReplacesAnnotationKey = "disruption.dovetail.dev/replaces"

// ReplacementCountAnnotationKey is set on a replacement NodeClaim to how
// many replacements its disruption command launches. They are created in
// parallel, so a controller stopped in between leaves only some; a
// restarted controller that finds fewer rolls the command back instead of
// deleting the candidates onto too little room.
const ReplacementCountAnnotationKey = "disruption.dovetail.dev/replacement-count"

// Replaces returns the names of the NodeClaims nc replaces.
func Replaces(nc *v1.NodeClaim) []string {
	var out []string
	for _, name := range strings.Split(nc.Annotations[ReplacesAnnotationKey], ",") {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// MinValuesRelaxedAnnotationKey marks a NodeClaim created although its
// instance types do not cover every minValues (MinValuesPolicy BestEffort).
const MinValuesRelaxedAnnotationKey = v1.Group + "/nodeclaim-min-values-relaxed"

// FromPlan renders a planned claim as a NodeClaim of pool, named by
// generateName from the pool: the template's labels (plus the claim's
// single-valued requirement labels and karpenter.sh/nodepool), annotations,
// taints, startup taints, node class, expiry and termination grace period;
// the claim's requirements and resource requests; the NodePool hash and
// its version, which drift compares against; the minValues-relaxed marker
// when the plan relaxed them; the NodePool as owner (blocking its deletion
// while the claim exists); and the termination finalizer. The lifecycle
// controller would add the finalizer before launching anyway; carrying it
// from creation saves that write, a round trip on every claim's way to
// its instance.
func FromPlan(claim *simulator.NewNodeClaim, pool *v1.NodePool) *v1.NodeClaim {
	tmpl := pool.Spec.Template
	labels := map[string]string{}
	maps.Copy(labels, tmpl.ObjectMeta.Labels)
	for k, v := range claim.Requirements.Labels() {
		if k != corev1.LabelHostname && k != requirements.NodeNameField {
			labels[k] = v
		}
	}
	labels[v1.NodePoolLabelKey] = pool.Name
	annotations := map[string]string{}
	maps.Copy(annotations, tmpl.ObjectMeta.Annotations)
	annotations[v1.NodePoolHashAnnotationKey] = nodepoolutil.TemplateHash(pool)
	annotations[v1.NodePoolHashVersionAnnotationKey] = nodepoolutil.HashVersion
	if claim.MinValuesRelaxed {
		annotations[MinValuesRelaxedAnnotationKey] = "true"
	}
	nc := &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Finalizers:   []string{v1.TerminationFinalizer},
			Labels:       labels,
			Annotations:  annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               pool.Name,
				UID:                pool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			NodeClaimTemplateSpec: *tmpl.Spec.DeepCopy(),
			Resources:             v1.ResourceRequirements{Requests: claim.Requests.DeepCopy()},
		},
	}
	nc.Spec.Requirements = claim.Requirements.NodeSelectorRequirements()
	return nc
}
