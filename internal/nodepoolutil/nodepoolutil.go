// Package nodepoolutil holds what provisioning, disruption and the NodePool
// controllers must compute the same way about NodePools: the template hash
// that detects drift, the order pools are tried in, and whether a pool may
// be used to launch nodes.
package nodepoolutil

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// HashVersion is the version of the hashing scheme; hashes of different
// versions are never compared (a new Dovetail does not drift every node).
const HashVersion = "dovetail-v1"

// hashedTemplate is the part of a NodePool whose change makes its nodes
// drift. Requirements are left out: requirement drift is checked against the
// node's labels instead, so that widening a requirement does not replace
// nodes that still satisfy it.
type hashedTemplate struct {
	Labels                 map[string]string      `json:"labels,omitempty"`
	Annotations            map[string]string      `json:"annotations,omitempty"`
	Taints                 []corev1.Taint         `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint         `json:"startupTaints,omitempty"`
	NodeClassRef           *v1.NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfter            string                 `json:"expireAfter"`
	TerminationGracePeriod string                 `json:"terminationGracePeriod,omitempty"`
}

// TemplateHash hashes the drift-relevant part of the NodePool's template.
// Map keys are serialised sorted, so equal templates hash equally.
func TemplateHash(np *v1.NodePool) string {
	t := np.Spec.Template
	h := hashedTemplate{
		Labels:        t.ObjectMeta.Labels,
		Annotations:   t.ObjectMeta.Annotations,
		Taints:        t.Spec.Taints,
		StartupTaints: t.Spec.StartupTaints,
		NodeClassRef:  t.Spec.NodeClassRef,
		ExpireAfter:   t.Spec.ExpireAfter.String(),
	}
	if t.Spec.TerminationGracePeriod != nil {
		h.TerminationGracePeriod = t.Spec.TerminationGracePeriod.Duration.String()
	}
	data, err := json.Marshal(h)
	if err != nil {
		// Every field is a plain value; Marshal cannot fail on it.
		panic(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}

// SortByWeight orders pools as they are tried: higher weight first, then by name.
func SortByWeight(pools []*v1.NodePool) {
	slices.SortStableFunc(pools, func(a, b *v1.NodePool) int {
		if c := cmp.Compare(weight(b), weight(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

func weight(np *v1.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// IsReady reports a NodePool that may launch nodes: not being deleted and
// with a Ready condition that is True.
func IsReady(np *v1.NodePool) bool {
	return np.DeletionTimestamp == nil && meta.IsStatusConditionTrue(np.Status.Conditions, v1.ConditionTypeReady)
}

// ConditionStatus returns a condition's status, or Unknown when absent.
func ConditionStatus(conditions []metav1.Condition, conditionType string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conditions, conditionType); c != nil {
		return c.Status
	}
	return metav1.ConditionUnknown
}
