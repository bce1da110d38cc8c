// Package nodepoolutil holds what provisioning, disruption and the NodePool
// controllers must compute the same way about NodePools: the template hash
// that detects drift, the order pools are tried in, and whether a pool may
// be used to launch nodes.
package nodepoolutil

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/mitchellh/hashstructure/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// HashVersion is the version of the hashing scheme, Karpenter v1's
// NodePoolHashVersion: TemplateHash computes the same value as Karpenter's
// NodePool.Hash(), so NodeClaims stamped by Karpenter are compared with
// Dovetail's hash and the other way round. Hashes of different versions are
// never compared: a claim of another version is re-stamped by the NodePool
// hash controller, not drifted.
const HashVersion = "v3"

// LegacyHashVersion is the hash version of Dovetail before it computed
// Karpenter's hash (a SHA-256 of the template's JSON). Claims that carry it
// are re-stamped with HashVersion; the old hash is never computed again.
const LegacyHashVersion = "dovetail-v1"

// hashOptions returns the options Karpenter's NodePool.Hash() passes to
// hashstructure (format v2). Each call gets its own: hashstructure keeps its
// hasher in the options it is given, so options shared by concurrent calls
// mix their inputs into each other's hashes.
func hashOptions() *hashstructure.HashOptions {
	return &hashstructure.HashOptions{
		SlicesAsSets:    true,
		IgnoreZeroValue: true,
		ZeroNil:         true,
	}
}

// TemplateHash returns the NodePool template hash exactly as Karpenter v1
// computes it: hashstructure (format v2, slices as sets, zero values and
// nil pointers ignored) of spec.template, in decimal. hashstructure hashes
// type and field names as well as values, so the API types keep
// Karpenter's names (NodeClaimTemplate, ObjectMeta, NodeClaimTemplateSpec,
// NodeClassReference, NillableDuration, Duration) and the fields Karpenter
// leaves out carry hash:"ignore" (requirements); unexported fields (the raw
// text of durations) are skipped by hashstructure. Labels, annotations,
// taints, startup taints, the NodeClass reference, expireAfter and
// terminationGracePeriod are hashed; the order of taints and of map keys
// does not matter.
func TemplateHash(np *v1.NodePool) string {
	h, err := hashstructure.Hash(hashedTemplate(np), hashstructure.FormatV2, hashOptions())
	if err != nil {
		// The template holds only strings, maps, slices, pointers and
		// integers, which hashstructure always hashes.
		panic(fmt.Errorf("hashing nodepool %s template: %w", np.Name, err))
	}
	return strconv.FormatUint(h, 10)
}

// hashedTemplate returns the NodePool's template with the durations rebuilt
// from their values alone. Dovetail's durations keep the text they were
// parsed from in an unexported field: hashstructure skips it, but it makes
// the duration non-zero, so an expireAfter of Never (nil, hence left out by
// Karpenter) or a zero terminationGracePeriod would otherwise be hashed as
// present. The NodePool is not modified.
func hashedTemplate(np *v1.NodePool) v1.NodeClaimTemplate {
	t := np.Spec.Template
	t.Spec.ExpireAfter = v1.NillableDuration{Duration: t.Spec.ExpireAfter.Duration}
	if grace := t.Spec.TerminationGracePeriod; grace != nil {
		d := v1.NewDuration(grace.Duration)
		t.Spec.TerminationGracePeriod = &d
	}
	return t
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
