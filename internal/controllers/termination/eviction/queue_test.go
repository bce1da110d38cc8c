package eviction_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/eviction"
)

func TestRateLimiterBacksOffPerPod(t *testing.T) {
	a := eviction.Key{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}, UID: "1"}
	b := eviction.Key{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}, UID: "2"}
	cases := map[string]struct {
		steps func(rl workqueue.TypedRateLimiter[eviction.Key]) []time.Duration
		want  []time.Duration
	}{
		"doubles from 100ms and stops at 10s": {
			steps: func(rl workqueue.TypedRateLimiter[eviction.Key]) []time.Duration {
				var got []time.Duration
				for range 10 {
					got = append(got, rl.When(a))
				}
				return got
			},
			want: []time.Duration{
				100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
				1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond,
				10 * time.Second, 10 * time.Second, 10 * time.Second,
			},
		},
		"a replacement pod with the same name starts afresh": {
			steps: func(rl workqueue.TypedRateLimiter[eviction.Key]) []time.Duration {
				return []time.Duration{rl.When(a), rl.When(a), rl.When(b)}
			},
			want: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond},
		},
		"forgetting a pod resets its backoff": {
			steps: func(rl workqueue.TypedRateLimiter[eviction.Key]) []time.Duration {
				first := []time.Duration{rl.When(a), rl.When(a)}
				rl.Forget(a)
				return append(first, rl.When(a))
			},
			want: []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 100 * time.Millisecond},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.steps(eviction.NewRateLimiter())
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("retry delays mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
