package runaway

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func pod(name, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web", "pod-template-hash": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
		}}}},
	}
}

// cluster is what Observe sees: claims and pods, edited by the test.
type cluster struct {
	claims map[string]ClaimState
	pods   map[string]*corev1.Pod
}

func newCluster(pods ...*corev1.Pod) *cluster {
	c := &cluster{claims: map[string]ClaimState{}, pods: map[string]*corev1.Pod{}}
	for _, p := range pods {
		c.pods[p.Name] = p
	}
	return c
}

func (c *cluster) observe(b *Breaker) {
	var pods []*corev1.Pod
	for _, p := range c.pods {
		pods = append(pods, p.DeepCopy())
	}
	b.Observe(func(name string) ClaimState { return c.claims[name] }, pods)
}

// TestLaunchLoopBacksOffExponentially runs the loop the Breaker exists for:
// every node launched for the pod registers, the pod never binds, and the
// provisioner asks again every 10 seconds for 10 minutes.
func TestLaunchLoopBacksOffExponentially(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := New(clk, 0, 0)
	p := pod("p", "1")
	c := newCluster(p)
	var launches []time.Duration
	var misses []Miss
	start := clk.Now()
	for i := 0; clk.Since(start) < 10*time.Minute; i++ {
		c.observe(b)
		d := b.Admit("default", []*corev1.Pod{p})
		misses = append(misses, d.Misses...)
		if d.Launch {
			name := "claim-" + clk.Since(start).String()
			b.RecordLaunch(name, "default", []*corev1.Pod{p})
			launches = append(launches, clk.Since(start))
			c.claims[name] = ClaimState{Exists: true} // launching
		}
		clk.Step(10 * time.Second)
		for name := range c.claims {
			c.claims[name] = ClaimState{Exists: true, Registered: true} // registered within 10 s; the pod stays pending
		}
	}
	want := []time.Duration{0, 70 * time.Second, 200 * time.Second, 450 * time.Second}
	if len(launches) != len(want) {
		t.Fatalf("launches at %v, want %v", launches, want)
	}
	for i := range want {
		if launches[i] != want[i] {
			t.Errorf("launch %d at %v, want %v", i, launches[i], want[i])
		}
	}
	for i, m := range misses {
		if m.Misses != i+1 || m.Key.NodePool != "default" || m.Pod.Name != "p" {
			t.Errorf("miss %d = %+v", i, m)
		}
	}
}

func TestBreaker(t *testing.T) {
	cases := map[string]struct {
		// run drives the breaker and returns the final decision for pod "p".
		run        func(b *Breaker, c *cluster, clk *clocktesting.FakeClock) Decision
		wantLaunch bool
		wantMisses int
	}{
		"first launch": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"claim still launching is not a miss (double provisioning is not this breaker's job)": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true}
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"claim failed before registering is not a miss": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.observe(b) // gone, never registered: insufficient capacity
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"registered claim, pod pending: miss and block": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantMisses: 1,
		},
		"registered then consolidated away: still a miss": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				delete(c.claims, "a")
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantMisses: 1,
		},
		"another NodePool is not blocked": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				b.Admit("default", []*corev1.Pod{c.pods["p"]})
				return b.Admit("other", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"a replica of the same shape is blocked too": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				b.Admit("default", []*corev1.Pod{c.pods["p"]})
				return b.Admit("default", []*corev1.Pod{pod("p2", "1")})
			},
		},
		"a pod of another shape on the same claim keeps it launching": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{c.pods["p"], pod("big", "2")})
			},
			wantLaunch: true, wantMisses: 1,
		},
		"backoff over: one more launch": {
			run: func(b *Breaker, c *cluster, clk *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				b.Admit("default", []*corev1.Pod{c.pods["p"]})
				clk.Step(DefaultBaseBackoff)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"a bound pod of the shape resets the backoff": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				b.Admit("default", []*corev1.Pod{c.pods["p"]})
				bound := c.pods["p"].DeepCopy()
				bound.Spec.NodeName = "node-a"
				c.pods["p"] = bound
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{pod("p2", "1")})
			},
			wantLaunch: true,
		},
		"a sibling bound: nodes its siblings waited on do not count": {
			run: func(b *Breaker, c *cluster, _ *clocktesting.FakeClock) Decision {
				sibling := pod("s", "1")
				c.pods["s"] = sibling
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"], sibling})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				bound := sibling.DeepCopy()
				bound.Spec.NodeName = "node-a"
				c.pods["s"] = bound
				c.observe(b)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
		"one unused node counts once however many passes see it": {
			run: func(b *Breaker, c *cluster, clk *clocktesting.FakeClock) Decision {
				b.RecordLaunch("a", "default", []*corev1.Pod{c.pods["p"]})
				c.claims["a"] = ClaimState{Exists: true, Registered: true}
				c.observe(b)
				for range 5 {
					b.Admit("default", []*corev1.Pod{c.pods["p"]})
					clk.Step(10 * time.Second)
				}
				clk.Step(DefaultBaseBackoff)
				return b.Admit("default", []*corev1.Pod{c.pods["p"]})
			},
			wantLaunch: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			b := New(clk, 0, 0)
			d := tc.run(b, newCluster(pod("p", "1")), clk)
			if d.Launch != tc.wantLaunch || len(d.Misses) != tc.wantMisses {
				t.Errorf("decision = launch %v with %d misses (%+v), want launch %v with %d", d.Launch, len(d.Misses), d, tc.wantLaunch, tc.wantMisses)
			}
		})
	}
}

func TestShape(t *testing.T) {
	base := pod("a", "1")
	cases := map[string]struct {
		edit func(p *corev1.Pod)
		same bool
	}{
		"another replica": {edit: func(p *corev1.Pod) { p.Name, p.UID, p.Labels["pod-template-hash"] = "b", "uid-b", "x" }, same: true},
		"different requests": {edit: func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
		}},
		"different namespace": {edit: func(p *corev1.Pod) { p.Namespace = "other" }},
		"different label":     {edit: func(p *corev1.Pod) { p.Labels["app"] = "db" }},
		"a node selector":     {edit: func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"zone": "a"} }},
		"a toleration": {edit: func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
		}},
		"a host port": {edit: func(p *corev1.Pod) { p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: 80}} }},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			other := base.DeepCopy()
			tc.edit(other)
			same := Shape(base) == Shape(other)
			if same != tc.same {
				t.Errorf("Shape equal = %v, want %v", same, tc.same)
			}
		})
	}
}

// BenchmarkObserve measures a pass after a 10,000-pod scale-out: every pod
// was launched for (one claim per 10 pods) and all bind at once.
func BenchmarkObserve(b *testing.B) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pods := make([]*corev1.Pod, 10000)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%d", i), "1")
	}
	bound := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		bound[i] = p.DeepCopy()
		bound[i].Spec.NodeName = "n"
	}
	registered := func(string) ClaimState { return ClaimState{Exists: true, Registered: true} }
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		br := New(clk, 0, 0)
		for i := 0; i < len(pods); i += 10 {
			br.RecordLaunch(fmt.Sprintf("claim-%d", i), "default", pods[i:i+10])
		}
		b.StartTimer()
		br.Observe(registered, bound)
	}
}
