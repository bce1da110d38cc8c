package manifest

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// Label and annotation keys of v1alpha5 that v1beta1 renamed or dropped.
const (
	provisionerNameLabel    = "karpenter.sh/provisioner-name"
	doNotEvictAnnotation    = "karpenter.sh/do-not-evict"
	doNotConsolidateAnnot   = "karpenter.sh/do-not-consolidate"
	provisionerHashAnnot    = "karpenter.sh/provisioner-hash"
	nodeTemplateHashAnnot   = "karpenter.k8s.aws/nodetemplate-hash"
	lastAppliedAnnotation   = "kubectl.kubernetes.io/last-applied-configuration"
	renamedAnnotationTarget = v1.DoNotDisruptAnnotationKey
)

// renameLabels renames karpenter.sh/provisioner-name to karpenter.sh/nodepool.
func renameLabels(labels map[string]string, where string, notes *[]string) map[string]string {
	value, ok := labels[provisionerNameLabel]
	if !ok {
		return labels
	}
	delete(labels, provisionerNameLabel)
	if _, taken := labels[v1.NodePoolLabelKey]; !taken {
		labels[v1.NodePoolLabelKey] = value
	}
	*notes = append(*notes, fmt.Sprintf("%s: label %s renamed to %s", where, provisionerNameLabel, v1.NodePoolLabelKey))
	return labels
}

// renameAnnotations replaces do-not-evict and do-not-consolidate by
// do-not-disrupt ("true" if either was "true"), and drops the hash
// annotations of the old kinds, which the controller recomputes for the new
// ones (a stale hash would make every node look drifted).
func renameAnnotations(annotations map[string]string, where string, notes *[]string) map[string]string {
	disrupt := false
	for _, key := range []string{doNotEvictAnnotation, doNotConsolidateAnnot} {
		if value, ok := annotations[key]; ok {
			delete(annotations, key)
			disrupt = disrupt || value == "true"
			*notes = append(*notes, fmt.Sprintf("%s: annotation %s replaced by %s", where, key, renamedAnnotationTarget))
		}
	}
	if _, set := annotations[renamedAnnotationTarget]; disrupt && !set {
		annotations[renamedAnnotationTarget] = "true"
	}
	for _, key := range []string{provisionerHashAnnot, nodeTemplateHashAnnot, lastAppliedAnnotation} {
		if _, ok := annotations[key]; ok {
			delete(annotations, key)
			if key != lastAppliedAnnotation {
				*notes = append(*notes, fmt.Sprintf("%s: annotation %s dropped; the controller writes the new kind's hash", where, key))
			}
		}
	}
	return annotations
}

// renameRequirements renames requirement keys karpenter.sh/provisioner-name.
func renameRequirements(reqs []v1.NodeSelectorRequirementWithMinValues, where string, notes *[]string) {
	for i := range reqs {
		if reqs[i].Key == provisionerNameLabel {
			reqs[i].Key = v1.NodePoolLabelKey
			*notes = append(*notes, fmt.Sprintf("%s: requirement key %s renamed to %s", where, provisionerNameLabel, v1.NodePoolLabelKey))
		}
	}
}

// applyRenames applies the v1alpha5 -> v1beta1 label and annotation renames
// to a converted object and returns what it changed.
func applyRenames(obj runtime.Object) []string {
	var notes []string
	meta := func(labels, annotations map[string]string) {
		renameLabels(labels, "metadata.labels", &notes)
		renameAnnotations(annotations, "metadata.annotations", &notes)
	}
	template := func(m *v1.ObjectMeta) {
		renameLabels(m.Labels, "spec.template.metadata.labels", &notes)
		renameAnnotations(m.Annotations, "spec.template.metadata.annotations", &notes)
	}
	switch o := obj.(type) {
	case *v1beta1.NodePool:
		meta(o.Labels, o.Annotations)
		template(&o.Spec.Template.ObjectMeta)
		renameRequirements(o.Spec.Template.Spec.Requirements, "spec.template.spec.requirements", &notes)
	case *v1.NodePool:
		meta(o.Labels, o.Annotations)
		template(&o.Spec.Template.ObjectMeta)
		renameRequirements(o.Spec.Template.Spec.Requirements, "spec.template.spec.requirements", &notes)
	case *v1beta1.NodeClaim:
		meta(o.Labels, o.Annotations)
		renameRequirements(o.Spec.Requirements, "spec.requirements", &notes)
	case *v1.NodeClaim:
		meta(o.Labels, o.Annotations)
		renameRequirements(o.Spec.Requirements, "spec.requirements", &notes)
	case *awsv1beta1.EC2NodeClass:
		meta(o.Labels, o.Annotations)
	case *awsv1.EC2NodeClass:
		meta(o.Labels, o.Annotations)
	}
	return notes
}

// oldKeysIn lists the renamed label and annotation keys that a document of
// another kind (a Deployment, a Pod) still uses; it passes through unchanged,
// so the user is told.
func oldKeysIn(raw []byte) []string {
	var found []string
	for _, key := range []string{provisionerNameLabel, doNotEvictAnnotation, doNotConsolidateAnnot} {
		if strings.Contains(string(raw), key) {
			found = append(found, key)
		}
	}
	return slices.Clip(found)
}
