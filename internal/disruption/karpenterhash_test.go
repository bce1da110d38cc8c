package disruption_test

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/disruption"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
)

// karpenterPoolJSON is a NodePool as the API server returns it (expireAfter
// defaulted to 720h). karpenterPoolHash is the hash Karpenter v1.14.1's
// NodePool.Hash() gives its template, version v3, obtained by a throwaway
// program importing sigs.k8s.io/karpenter@v1.14.1 (see the fixtures in
// internal/nodepoolutil); it is what Karpenter stamps on its NodeClaims.
const (
	karpenterPoolJSON = `{"metadata":{"name":"default"},"spec":{"template":{
		"metadata":{"labels":{"team":"payments","tier":"web"}},
		"spec":{"nodeClassRef":{"group":"karpenter.kwok.sh","kind":"KWOKNodeClass","name":"default"},
			"requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}],
			"expireAfter":"720h"}}}}`
	karpenterPoolHash = "9800041750691176007"
)

// TestKarpenterStampedClaimIsNotDrifted shows a NodeClaim launched by
// Karpenter, carrying Karpenter's hash annotations, is not drifted under
// Dovetail while the template is unchanged, and is once it changes.
func TestKarpenterStampedClaimIsNotDrifted(t *testing.T) {
	cases := map[string]struct {
		mutate     func(*v1.NodePool)
		version    string
		wantReason string
	}{
		"unchanged template":            {version: "v3"},
		"requirements changed (kept)":   {version: "v3", mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements[0].Values = []string{"amd64", "arm64"} }},
		"weight and disruption changed": {version: "v3", mutate: func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty }},
		"template label changed": {version: "v3", wantReason: disruption.DriftReasonNodePool,
			mutate: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["tier"] = "api" }},
		"older hash version is not compared": {version: "v2",
			mutate: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["tier"] = "api" }},
		"legacy Dovetail version is not compared": {version: nodepoolutil.LegacyHashVersion,
			mutate: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["tier"] = "api" }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := &v1.NodePool{}
			if err := json.Unmarshal([]byte(karpenterPoolJSON), np); err != nil {
				t.Fatalf("decoding nodepool: %v", err)
			}
			if tc.mutate != nil {
				tc.mutate(np)
			}
			nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
				Name:   "default-abcde",
				Labels: map[string]string{v1.NodePoolLabelKey: "default", "kubernetes.io/arch": "amd64", "team": "payments", "tier": "web"},
				Annotations: map[string]string{
					v1.NodePoolHashAnnotationKey:        karpenterPoolHash,
					v1.NodePoolHashVersionAnnotationKey: tc.version,
				},
			}}
			if reason, msg := disruption.StaticDrift(nc, np); reason != tc.wantReason {
				t.Errorf("drift reason = %q (%s), want %q", reason, msg, tc.wantReason)
			}
		})
	}
}
