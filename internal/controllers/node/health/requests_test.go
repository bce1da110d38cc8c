package health

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

func request(claim, node string) Request {
	return Request{NodeClaim: claim, Node: node,
		Condition: corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(epoch)},
		Policy:    cloudprovider.RepairPolicy{ConditionType: "AcceleratedHardwareReady", ConditionStatus: metav1.ConditionFalse, TolerationDuration: 10 * time.Minute}}
}

func TestRequests(t *testing.T) {
	cases := map[string]struct {
		do   func(r *Requests)
		want []string // claims left
		// woken: whether Changed has a value after do.
		woken bool
	}{
		"empty":                      {do: func(*Requests) {}},
		"added":                      {do: func(r *Requests) { r.Add(request("a", "n-a")) }, want: []string{"a"}, woken: true},
		"added twice wakes once":     {do: func(r *Requests) { r.Add(request("a", "n-a")); <-r.Changed(); r.Add(request("a", "n-a")) }, want: []string{"a"}},
		"removed by claim":           {do: func(r *Requests) { r.Add(request("a", "n-a")); r.Add(request("b", "n-b")); r.Remove("a") }, want: []string{"b"}, woken: true},
		"removed by node":            {do: func(r *Requests) { r.Add(request("a", "n-a")); r.Add(request("b", "n-b")); r.RemoveNode("n-b") }, want: []string{"a"}, woken: true},
		"removing what is not there": {do: func(r *Requests) { r.Remove("a"); r.RemoveNode("n-a") }},
		"several adds coalesce":      {do: func(r *Requests) { r.Add(request("a", "n-a")); r.Add(request("b", "n-b")) }, want: []string{"a", "b"}, woken: true},
		"re-added after removal wakes": {do: func(r *Requests) {
			r.Add(request("a", "n-a"))
			<-r.Changed()
			r.Remove("a")
			r.Add(request("a", "n-a"))
		}, want: []string{"a"}, woken: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewRequests()
			tc.do(r)
			got := r.Snapshot()
			if len(got) != len(tc.want) {
				t.Fatalf("requests %v, want %v", got, tc.want)
			}
			for _, claim := range tc.want {
				if _, ok := r.Get(claim); !ok || got[claim].NodeClaim != claim {
					t.Errorf("request of %s missing: %v", claim, got)
				}
			}
			woken := false
			select {
			case <-r.Changed():
				woken = true
			default:
			}
			if woken != tc.woken {
				t.Errorf("woken = %v, want %v", woken, tc.woken)
			}
		})
	}
}

func TestRequestExplains(t *testing.T) {
	r := request("a", "n-a")
	if got := r.ConditionLabel(); got != "accelerated_hardware_ready" {
		t.Errorf("ConditionLabel() = %q", got)
	}
	if got, want := r.Why(), "AcceleratedHardwareReady=False since 2030-01-02T03:04:05Z, longer than the 10m0s the cloud provider tolerates"; got != want {
		t.Errorf("Why() = %q, want %q", got, want)
	}
}

// TestRequestsConcurrently: one writer and readers at once (run under -race).
func TestRequestsConcurrently(t *testing.T) {
	r := NewRequests()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range 200 {
			claim := fmt.Sprint("c-", i%10)
			r.Add(request(claim, "n-"+claim))
			if i%3 == 0 {
				r.Remove(claim)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for range 200 {
			for claim := range r.Snapshot() {
				r.Get(claim)
			}
			select {
			case <-r.Changed():
			default:
			}
		}
	}()
	wg.Wait()
	if n := len(r.Snapshot()); n > 10 {
		t.Errorf("%d requests for 10 claims", n)
	}
}
