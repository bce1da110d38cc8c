package conversion

import (
	"encoding/json"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// Annotations that carry, on a v1beta1 object, the v1 values that have no
// v1beta1 field. They are written only by v1 -> v1beta1 conversion and always
// consumed by v1beta1 -> v1 conversion, so they are never stored: etcd holds
// v1. Karpenter v1.0 dropped these values instead (see docs/migration.md).
const (
	// V1FieldsAnnotationKey holds, on a v1beta1 NodePool or NodeClaim, a JSON
	// object with the v1 values that v1beta1 cannot express (budget reasons,
	// consolidateAfter with WhenEmptyOrUnderutilized, the Balanced policy and
	// its consolidationThreshold, a static pool's replicas,
	// terminationGracePeriod, a NodeClaim's expireAfter, status.nodes,
	// status.lastPodEventTime).
	V1FieldsAnnotationKey = "compatibility.karpenter.sh/v1-fields"
	// EC2NodeClassV1FieldsAnnotationKey holds, on a v1beta1 EC2NodeClass, a JSON
	// object with the v1 values that v1beta1 cannot express (kubelet,
	// capacityReservationSelectorTerms, status.capacityReservations, and
	// amiFamily/amiSelectorTerms when the
	// v1beta1 amiFamily and terms cannot reproduce them).
	EC2NodeClassV1FieldsAnnotationKey = "compatibility.karpenter.k8s.aws/v1-fields"
)

// Specifiers of awsv1.AnnotationUbuntuCompatibility, in the order Karpenter
// v1.0 writes them: what the v1beta1 -> v1 conversion of an Ubuntu
// EC2NodeClass changed, so that v1 -> v1beta1 can undo it.
const (
	ubuntuAMIFamily           = "amiFamily"
	ubuntuBlockDeviceMappings = "blockDeviceMappings"
	ubuntuIncompatible        = "incompatible"
)

// nodePoolV1Fields is the value of V1FieldsAnnotationKey on a v1beta1 NodePool.
type nodePoolV1Fields struct {
	// Disruption is the whole v1 disruption block, kept when the v1beta1 one
	// converts back to something else: budgets with reasons, a consolidateAfter
	// other than 0s or Never with WhenEmptyOrUnderutilized, the document
	// spelling WhenUnderutilized, the Balanced policy with its
	// consolidationThreshold. It is used only while the v1beta1 disruption
	// block still converts down from it, so an edit made through v1beta1 wins.
	Disruption *v1.Disruption `json:"disruption,omitempty"`
	// TerminationGracePeriod is spec.template.spec.terminationGracePeriod.
	TerminationGracePeriod *v1.Duration `json:"terminationGracePeriod,omitempty"`
	// Nodes is status.nodes.
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassGroup is a nodeClassRef group written with a version.
	NodeClassGroup string `json:"nodeClassGroup,omitempty"`
	// Replicas is spec.replicas of a static NodePool (Karpenter v1.8), which
	// v1beta1 has no field for. It always comes back: a pool cannot switch
	// between static and dynamic, so a v1beta1 write that dropped the
	// annotation is rejected rather than turning the pool dynamic. The v1
	// CRD's rules do not see it (the API server checks a v1beta1 write
	// against the v1beta1 schema); the admission policy that crdinstall
	// installs with the CRDs (internal/crdinstall/policies) does.
	Replicas *int64 `json:"replicas,omitempty"`
}

// nodeClaimV1Fields is the value of V1FieldsAnnotationKey on a v1beta1 NodeClaim.
type nodeClaimV1Fields struct {
	// ExpireAfter is spec.expireAfter, kept only when it differs from what
	// v1beta1 -> v1 would derive from the owning NodePool.
	ExpireAfter *v1.NillableDuration `json:"expireAfter,omitempty"`
	// TerminationGracePeriod is spec.terminationGracePeriod.
	TerminationGracePeriod *v1.Duration `json:"terminationGracePeriod,omitempty"`
	// LastPodEventTime is status.lastPodEventTime.
	LastPodEventTime *metav1.Time `json:"lastPodEventTime,omitempty"`
	// NodeClassGroup is a nodeClassRef group written with a version.
	NodeClassGroup string `json:"nodeClassGroup,omitempty"`
}

// ec2NodeClassV1Fields is the value of EC2NodeClassV1FieldsAnnotationKey on a
// v1beta1 EC2NodeClass.
type ec2NodeClassV1Fields struct {
	// AMI is the v1 AMI selection, kept when the v1beta1 amiFamily and terms
	// convert back to something else; used only while they still convert down
	// from it.
	AMI *amiSelection `json:"ami,omitempty"`
	// Kubelet is spec.kubelet.
	Kubelet *awsv1.KubeletConfiguration `json:"kubelet,omitempty"`
	// CapacityReservationSelectorTerms is spec.capacityReservationSelectorTerms.
	CapacityReservationSelectorTerms []awsv1.CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// CapacityReservations is status.capacityReservations.
	CapacityReservations []awsv1.CapacityReservation `json:"capacityReservations,omitempty"`
}

// amiSelection is the part of a v1 EC2NodeClass that the amiFamily <-> alias
// mapping (and Karpenter's Ubuntu handling) rewrites.
type amiSelection struct {
	AMIFamily           *string                     `json:"amiFamily,omitempty"`
	AMISelectorTerms    []awsv1.AMISelectorTerm     `json:"amiSelectorTerms,omitempty"`
	BlockDeviceMappings []*awsv1.BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// Ubuntu is the value of the v1beta1-ubuntu annotation, if any.
	Ubuntu *string `json:"ubuntu,omitempty"`
}

// popJSONAnnotation removes key from annotations and, when it was present,
// decodes its value into out. It reports whether the key was present.
func popJSONAnnotation(annotations map[string]string, key string, out any) (bool, error) {
	raw, ok := annotations[key]
	if !ok {
		return false, nil
	}
	delete(annotations, key)
	if err := json.Unmarshal([]byte(raw), out); err != nil {
		return true, fmt.Errorf("decoding annotation %q: %w", key, err)
	}
	return true, nil
}

// setJSONAnnotation stores v as JSON under key, or removes key when v is nil.
func setJSONAnnotation(annotations map[string]string, key string, v any) (map[string]string, error) {
	if v == nil {
		delete(annotations, key)
		return annotations, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return annotations, fmt.Errorf("encoding annotation %q: %w", key, err)
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[key] = string(raw)
	return annotations, nil
}

// nilIfEmpty returns nil for an empty map so that converted objects do not
// gain an empty annotations map.
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Semantic returns apimachinery's semantic equality (quantities by value,
// times in UTC, nil and empty collections alike) extended to compare
// v1.NillableDuration and v1.Duration by their text: the types keep the text
// they were parsed from in an unexported field, which apimachinery's
// reflection cannot read, and the text is what the API writes back ("10h"
// stays "10h"). Every round-trip decision of this package, and its fuzz
// tests, use it.
func Semantic() conversion.Equalities {
	e := apiequality.Semantic.Copy()
	if err := e.AddFuncs(
		func(a, b v1.NillableDuration) bool { return a.String() == b.String() },
		func(a, b v1.Duration) bool { return a.String() == b.String() },
	); err != nil {
		panic(err) // the functions' signatures are fixed above; this cannot fail
	}
	return e
}

// equal reports whether a and b are equal under Semantic.
func equal(a, b any) bool { return Semantic().DeepEqual(a, b) }
