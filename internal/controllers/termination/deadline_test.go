package termination

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func TestTerminationTime(t *testing.T) {
	deleted := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	claim := func(tgp *time.Duration, annotation *string) *v1.NodeClaim {
		nc := &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim", DeletionTimestamp: &metav1.Time{Time: deleted}}}
		if tgp != nil {
			nc.Spec.TerminationGracePeriod = ptr.To(v1.NewDuration(*tgp))
		}
		if annotation != nil {
			nc.Annotations = map[string]string{v1.NodeClaimTerminationTimestampAnnotationKey: *annotation}
		}
		return nc
	}
	type result struct {
		Deadline *time.Time
		Err      bool
	}
	cases := map[string]struct {
		nodeClaim *v1.NodeClaim
		want      result
	}{
		"no nodeclaim":                          {want: result{}},
		"no grace period, no annotation":        {nodeClaim: claim(nil, nil), want: result{}},
		"grace period, not annotated yet":       {nodeClaim: claim(ptr.To(time.Hour), nil), want: result{Deadline: ptr.To(deleted.Add(time.Hour))}},
		"annotation wins over the grace period": {nodeClaim: claim(ptr.To(time.Hour), ptr.To("2026-01-02T03:05:05Z")), want: result{Deadline: ptr.To(deleted.Add(time.Minute))}},
		"annotation without a grace period (forceful termination)": {
			nodeClaim: claim(nil, ptr.To("2026-01-02T03:04:05Z")), want: result{Deadline: ptr.To(deleted)},
		},
		"malformed annotation falls back to the grace period": {
			nodeClaim: claim(ptr.To(time.Hour), ptr.To("tomorrow")), want: result{Deadline: ptr.To(deleted.Add(time.Hour)), Err: true},
		},
		"malformed annotation and no grace period": {nodeClaim: claim(nil, ptr.To("tomorrow")), want: result{Err: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			deadline, err := terminationTime(tc.nodeClaim)
			got := result{Deadline: deadline, Err: err != nil}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("terminationTime() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDisruptionReason(t *testing.T) {
	withCondition := func(status metav1.ConditionStatus, reason string) *v1.NodeClaim {
		return &v1.NodeClaim{Status: v1.NodeClaimStatus{Conditions: []metav1.Condition{{
			Type: v1.ConditionTypeDisruptionReason, Status: status, Reason: reason,
		}}}}
	}
	cases := map[string]struct {
		nodeClaim *v1.NodeClaim
		want      string
	}{
		"no nodeclaim":           {want: "Forceful Termination"},
		"no disruption reason":   {nodeClaim: &v1.NodeClaim{}, want: "Forceful Termination"},
		"disrupted for a reason": {nodeClaim: withCondition(metav1.ConditionTrue, "Underutilized"), want: "Underutilized"},
		"stale reason":           {nodeClaim: withCondition(metav1.ConditionFalse, "Drifted"), want: "Forceful Termination"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := disruptionReason(tc.nodeClaim); got != tc.want {
				t.Errorf("disruptionReason() = %q, want %q", got, tc.want)
			}
		})
	}
}
