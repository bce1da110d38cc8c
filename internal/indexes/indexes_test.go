package indexes

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recordingIndexer keeps the extract function of each index Setup registers.
type recordingIndexer map[string]client.IndexerFunc

func (r recordingIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	r[kindOf(obj)+"/"+field] = extract
	return nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Pod:
		return "Pod"
	default:
		return "other"
	}
}

// TestPodIndexes checks which pods each pod index holds, and under what value.
func TestPodIndexes(t *testing.T) {
	indexer := recordingIndexer{}
	if err := Setup(context.Background(), indexer); err != nil {
		t.Fatal(err)
	}
	unschedulable := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	deleted := metav1.Now()
	cases := map[string]struct {
		pod  corev1.Pod
		want map[string][]string
	}{
		"pending, never tried": {
			pod:  corev1.Pod{},
			want: map[string][]string{PodNodeName: nil, PodNominatedNodeName: nil, PodProvisionable: nil},
		},
		"reported unschedulable": {
			pod:  corev1.Pod{Status: corev1.PodStatus{Conditions: unschedulable}},
			want: map[string][]string{PodNodeName: nil, PodNominatedNodeName: nil, PodProvisionable: {ProvisionableValue}},
		},
		"unschedulable and nominated": {
			pod:  corev1.Pod{Status: corev1.PodStatus{Conditions: unschedulable, NominatedNodeName: "n1"}},
			want: map[string][]string{PodNodeName: nil, PodNominatedNodeName: {"n1"}, PodProvisionable: nil},
		},
		"unschedulable and being deleted": {
			pod:  corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}, Status: corev1.PodStatus{Conditions: unschedulable}},
			want: map[string][]string{PodNodeName: nil, PodNominatedNodeName: nil, PodProvisionable: nil},
		},
		"bound": {
			pod:  corev1.Pod{Spec: corev1.PodSpec{NodeName: "n2"}, Status: corev1.PodStatus{Conditions: unschedulable}},
			want: map[string][]string{PodNodeName: {"n2"}, PodNominatedNodeName: nil, PodProvisionable: nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for field, want := range tc.want {
				extract := indexer["Pod/"+field]
				if extract == nil {
					t.Fatalf("no pod index %q registered", field)
				}
				if got := extract(&tc.pod); !slices.Equal(got, want) {
					t.Errorf("index %s: %q, want %q", field, got, want)
				}
			}
		})
	}
}
