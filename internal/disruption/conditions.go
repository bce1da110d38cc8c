package disruption

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Drift reasons of the NodeClaim Drifted condition.
const (
	// DriftReasonNodePool: the NodePool's template changed since the claim was made.
	DriftReasonNodePool = "NodePoolDrifted"
	// DriftReasonRequirements: the claim's labels no longer satisfy the NodePool's requirements.
	DriftReasonRequirements = "RequirementsDrifted"
)

// A cloud provider's drift reason (for example the AWS provider's AMIDrift)
// is used as the Drifted condition's reason as it is.

// ConsolidatableAt is when consolidateAfter will have passed since the
// claim's last pod event (or its initialization), and ok=false when its
// NodePool never consolidates (consolidateAfter Never, or a static pool,
// whose consolidation settings are ignored as in Karpenter) or the claim is
// not initialized. The conditions controller and Decide both use it, so
// that the Consolidatable condition and decisions agree: a static pool's
// nodes are never emptiness or consolidation candidates.
func ConsolidatableAt(nc *v1.NodeClaim, np *v1.NodePool) (at time.Time, ok bool) {
	after := np.Spec.Disruption.ConsolidateAfter
	if after.IsNever() || np.IsStatic() {
		return time.Time{}, false
	}
	init := meta.FindStatusCondition(nc.Status.Conditions, v1.ConditionTypeInitialized)
	if init == nil || init.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	base := init.LastTransitionTime.Time
	if last := nc.Status.LastPodEventTime.Time; last.After(base) {
		base = last
	}
	return base.Add(*after.Duration), true
}

// IsConsolidatable reports whether consolidateAfter has passed at now.
func IsConsolidatable(nc *v1.NodeClaim, np *v1.NodePool, now time.Time) bool {
	at, ok := ConsolidatableAt(nc, np)
	return ok && !now.Before(at)
}

// StaticDrift reports whether the claim drifted from its NodePool, with the
// condition reason and a message, checking the template hash (only hashes
// of the same hashing version are compared, and only claims that carry
// one) and then the requirements against the claim's labels. Drift the
// cloud provider detects (NodeClass drift) is checked by the caller.
func StaticDrift(nc *v1.NodeClaim, np *v1.NodePool) (reason, message string) {
	hash, version := nc.Annotations[v1.NodePoolHashAnnotationKey], nc.Annotations[v1.NodePoolHashVersionAnnotationKey]
	if hash != "" && version == nodepoolutil.HashVersion {
		if current := nodepoolutil.TemplateHash(np); current != hash {
			return DriftReasonNodePool, fmt.Sprintf("NodePool %s template changed (hash %s, was %s)", np.Name, current, hash)
		}
	}
	if msg := requirementsDrift(nc, np); msg != "" {
		return DriftReasonRequirements, msg
	}
	return "", ""
}

// requirementsDrift names the first NodePool requirement the claim no
// longer satisfies. A label the claim carries must be allowed. A label it
// lacks is fine if the requirement admits nodes without it, or if the
// claim was made under a requirement on that key (a multi-value In leaves
// no label) that still overlaps the pool's; otherwise the pool now demands
// a label the node does not have.
func requirementsDrift(nc *v1.NodeClaim, np *v1.NodePool) string {
	pool, err := requirements.FromNodePoolRequirements(np.Spec.Template.Spec.Requirements)
	if err != nil {
		// An invalid NodePool is reported by the NodePool controllers; it
		// must not roll every node.
		return ""
	}
	own, _ := requirements.FromNodePoolRequirements(nc.Spec.Requirements)
	for _, req := range pool.List() {
		if value, ok := nc.Labels[req.Key()]; ok {
			if !req.Has(value) {
				return fmt.Sprintf("Label %s=%s does not satisfy NodePool requirement %s", req.Key(), value, req)
			}
			continue
		}
		if req.AllowsAbsent() {
			continue
		}
		if mine, ok := own.Get(req.Key()); ok {
			if !mine.Intersect(req).Satisfiable() {
				return fmt.Sprintf("NodeClaim requirement %s does not overlap NodePool requirement %s", mine, req)
			}
			continue
		}
		return fmt.Sprintf("NodeClaim has no label %s, which NodePool requirement %s demands", req.Key(), req)
	}
	return ""
}
