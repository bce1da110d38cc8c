package conversion

import (
	"encoding/json"
	"strings"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
)

// nodeClassRefToV1 maps a v1beta1 reference to v1: the group is the part of
// apiVersion before "/", and a missing kind or apiVersion means the default
// NodeClass.
func (c *Converter) nodeClassRefToV1(in *v1beta1.NodeClassReference) *v1.NodeClassReference {
	if in == nil {
		return nil
	}
	def := c.defaultNodeClass()
	out := &v1.NodeClassReference{Name: in.Name, Kind: in.Kind, Group: def.Group}
	if out.Kind == "" {
		out.Kind = def.Kind
	}
	if in.APIVersion != "" {
		out.Group, _, _ = strings.Cut(in.APIVersion, "/")
	}
	return out
}

// nodeClassRefToV1beta1 is the v1beta1 reference a v1 reference converts to
// when no annotation says otherwise: every field set, with the version of the
// group that v1beta1 clients knew.
func nodeClassRefToV1beta1(in *v1.NodeClassReference) *v1beta1.NodeClassReference {
	if in == nil {
		return nil
	}
	apiVersion := in.Group + "/" + v1beta1EraVersion(in.Group)
	if strings.Contains(in.Group, "/") {
		apiVersion = in.Group // the group already names a version
	}
	return &v1beta1.NodeClassReference{Name: in.Name, Kind: in.Kind, APIVersion: apiVersion}
}

// versionedGroup returns the reference's group when it carries a version
// ("karpenter.k8s.aws/v1", which v1 accepts and ignores), else "". A v1beta1
// reference cannot hold it apart from apiVersion, so the v1-fields
// annotation keeps it for the way back.
func versionedGroup(ref *v1.NodeClassReference) string {
	if ref != nil && strings.Contains(ref.Group, "/") {
		return ref.Group
	}
	return ""
}

// restoreVersionedGroup puts a kept versioned group back on a converted
// reference that still names the same group.
func restoreVersionedGroup(ref *v1.NodeClassReference, kept string) {
	if ref == nil || kept == "" {
		return
	}
	if group, _, _ := strings.Cut(kept, "/"); group == ref.Group {
		ref.Group = kept
	}
}

// v1beta1EraVersion is the version a v1beta1 NodePool's nodeClassRef names for
// a NodeClass group: v1beta1 for EC2NodeClass (the version v1beta1 NodePools
// were written against), v1alpha1 for KWOKNodeClass (its only version), v1 for
// any other group. Only the group is ever used to find the NodeClass.
func v1beta1EraVersion(group string) string {
	switch group {
	case awsv1.Group:
		return "v1beta1"
	case kwokv1alpha1.Group:
		return kwokv1alpha1.SchemeGroupVersion.Version
	default:
		return "v1"
	}
}

// convertNodeClassRefToV1 converts a v1beta1 reference (restoring a versioned
// group kept on the way down) and records it in the
// v1beta1-nodeclass-reference annotation when the v1 reference alone would not
// convert back to it (for instance a reference that only names the NodeClass).
func (c *Converter) convertNodeClassRefToV1(in *v1beta1.NodeClassReference, keptGroup string, annotations map[string]string) (*v1.NodeClassReference, map[string]string, error) {
	delete(annotations, v1.NodeClassReferenceAnnotationKey)
	out := c.nodeClassRefToV1(in)
	restoreVersionedGroup(out, keptGroup)
	if in == nil || equal(nodeClassRefToV1beta1(out), in) {
		return out, annotations, nil
	}
	annotations, err := setJSONAnnotation(annotations, v1.NodeClassReferenceAnnotationKey, in)
	return out, annotations, err
}

// convertNodeClassRefToV1beta1 converts a v1 reference, restoring the v1beta1
// reference kept in the annotation when it still names the same NodeClass. An
// annotation that no longer matches (the v1 reference was edited since) or does
// not parse is dropped: it only ever decides how the reference is spelled.
func (c *Converter) convertNodeClassRefToV1beta1(in *v1.NodeClassReference, annotations map[string]string) *v1beta1.NodeClassReference {
	raw, ok := annotations[v1.NodeClassReferenceAnnotationKey]
	delete(annotations, v1.NodeClassReferenceAnnotationKey)
	if ok && in != nil {
		kept := &v1beta1.NodeClassReference{}
		if err := json.Unmarshal([]byte(raw), kept); err == nil && equal(c.nodeClassRefToV1(kept), in) {
			return kept
		}
	}
	return nodeClassRefToV1beta1(in)
}
