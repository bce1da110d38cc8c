package static

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/machine"
	"github.com/dovetail-autoscaler/dovetail/internal/nodeclaimutil"
	dtesting "github.com/dovetail-autoscaler/dovetail/internal/testing"
)

var now = time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

// pool is a static pool of replicas, with limits.nodes when limit >= 0 and
// the given budgets (none: unlimited).
func pool(replicas int64, limit int64, budgets ...v1.Budget) *v1.NodePool {
	np := dtesting.MakeNodePool("static").Obj()
	np.Spec.Replicas = ptr.To(replicas)
	if limit >= 0 {
		np.Spec.Limits = v1.Limits{"nodes": *resource.NewQuantity(limit, resource.DecimalSI)}
	}
	np.Spec.Disruption.Budgets = append([]v1.Budget{}, budgets...)
	return np
}

// claim is a machine of the static pool; launched ones have an
// initialized, Ready node carrying the pods.
type claim struct {
	name     string
	launched bool
	pods     int
	opts     []func(*machine.Machine)
}

func (c claim) machine() *machine.Machine {
	m := &machine.Machine{NodeClaim: &v1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: c.name, UID: types.UID("uid-" + c.name), Labels: map[string]string{v1.NodePoolLabelKey: "static"}, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)),
	}}}
	if c.launched {
		m.Node = &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: map[string]string{v1.NodePoolLabelKey: "static", v1.NodeInitializedLabelKey: "true"}},
			Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		m.NodeClaim.Status.ProviderID = "fake://" + c.name
		for i := range c.pods {
			p := dtesting.MakePod(c.name+"-"+string(rune('a'+i))).Req("cpu", "100m").Obj()
			p.Spec.NodeName = c.name
			p.Status.Phase = corev1.PodRunning
			m.Pods = append(m.Pods, p)
		}
	}
	for _, o := range c.opts {
		o(m)
	}
	return m
}

func marked(m *machine.Machine) { m.MarkedForDeletion = true }
func deleting(m *machine.Machine) {
	m.MarkedForDeletion = true
	m.NodeClaim.DeletionTimestamp = new(metav1.NewTime(now))
}
func replaces(names string) func(*machine.Machine) {
	return func(m *machine.Machine) { m.NodeClaim.Annotations[nodeclaimutil.ReplacesAnnotationKey] = names }
}
func disrupting(m *machine.Machine) {
	m.NodeClaim.Status.Conditions = []metav1.Condition{{Type: v1.ConditionTypeDisruptionReason, Status: metav1.ConditionTrue, Reason: "Drifted"}}
}
func priority(p string) func(*machine.Machine) {
	return func(m *machine.Machine) { m.NodeClaim.Annotations[DeprovisioningPriorityAnnotationKey] = p }
}
func doNotDisrupt(m *machine.Machine) {
	m.Pods[0].Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
}
func notReady(m *machine.Machine) { m.Node.Status.Conditions[0].Status = corev1.ConditionFalse }

func TestDecide(t *testing.T) {
	type want struct {
		Target, Current, Create int64
		Delete                  []string
		Held                    int
		Limited                 bool
	}
	cases := map[string]struct {
		pool   *v1.NodePool
		claims []claim
		// deleted are the claims the controller deleted that the model
		// does not show deleting yet.
		deleted map[types.UID]bool
		want    want
	}{
		"a claim this controller deleted counts as leaving before the model shows it": {
			pool:    pool(1, -1),
			claims:  []claim{{name: "a", launched: true}, {name: "b", launched: true}, {name: "c", launched: true}},
			deleted: map[types.UID]bool{"uid-a": true},
			want:    want{Target: 1, Current: 2, Delete: []string{"b"}},
		},
		"an empty pool gets its replicas": {
			pool: pool(3, -1), want: want{Target: 3, Create: 3},
		},
		"missing claims are created": {
			pool:   pool(3, -1),
			claims: []claim{{name: "a", launched: true}, {name: "b"}},
			want:   want{Target: 3, Current: 2, Create: 1},
		},
		"claims being deleted do not count": {
			pool:   pool(2, -1),
			claims: []claim{{name: "a", launched: true}, {name: "b", launched: true, opts: []func(*machine.Machine){deleting}}},
			want:   want{Target: 2, Current: 1, Create: 1},
		},
		// The command marks and conditions its candidate before it creates
		// the replacement: in between, the candidate still counts, or the
		// pool would launch a replacement of its own beside the command's.
		"a drift candidate counts until its replacement is in the model": {
			pool:   pool(2, -1),
			claims: []claim{{name: "a", launched: true}, {name: "b", launched: true, opts: []func(*machine.Machine){marked, disrupting}}},
			want:   want{Target: 2, Current: 2},
		},
		"a drift candidate's replacement counts instead of it": {
			pool:   pool(2, -1),
			claims: []claim{{name: "a", launched: true}, {name: "b", launched: true, opts: []func(*machine.Machine){disrupting}}, {name: "b-replacement", opts: []func(*machine.Machine){replaces("x,b")}}},
			want:   want{Target: 2, Current: 2},
		},
		"limits.nodes caps replicas": {
			pool:   pool(3, 2),
			claims: []claim{{name: "a", launched: true}},
			want:   want{Target: 2, Current: 1, Create: 1, Limited: true},
		},
		"limits.nodes 0 launches nothing": {
			pool: pool(3, 0), want: want{Target: 0, Limited: true},
		},
		"at replicas nothing happens": {
			pool:   pool(2, -1),
			claims: []claim{{name: "a", launched: true, pods: 1}, {name: "b", launched: true}},
			want:   want{Target: 2, Current: 2},
		},
		"scale-down takes unlaunched claims, then empty nodes, then the least used": {
			pool: pool(1, -1),
			claims: []claim{
				{name: "busy", launched: true, pods: 3}, {name: "light", launched: true, pods: 1},
				{name: "empty", launched: true}, {name: "inflight"},
			},
			want: want{Target: 1, Current: 4, Delete: []string{"inflight", "empty", "light"}},
		},
		"do-not-disrupt pods go last, the priority annotation first": {
			pool: pool(1, -1),
			claims: []claim{
				{name: "a", launched: true, pods: 1, opts: []func(*machine.Machine){doNotDisrupt}},
				{name: "b", launched: true, pods: 2},
				{name: "c", launched: true, pods: 3, opts: []func(*machine.Machine){priority("10")}},
			},
			want: want{Target: 1, Current: 3, Delete: []string{"c", "b"}},
		},
		"scale to zero": {
			pool:   pool(0, -1),
			claims: []claim{{name: "a", launched: true, pods: 1}, {name: "b", launched: true}},
			want:   want{Target: 0, Current: 2, Delete: []string{"b", "a"}},
		},
		"budgets hold launched nodes, not unlaunched claims": {
			pool: pool(1, -1, v1.Budget{Nodes: intstr.FromString("1")}),
			claims: []claim{
				{name: "a", launched: true}, {name: "b", launched: true}, {name: "c", launched: true}, {name: "d"},
			},
			want: want{Target: 1, Current: 4, Delete: []string{"d", "a"}, Held: 1},
		},
		"nodes already disrupted use up the budget": {
			pool: pool(1, -1, v1.Budget{Nodes: intstr.FromString("1")}),
			claims: []claim{
				{name: "a", launched: true}, {name: "b", launched: true, opts: []func(*machine.Machine){notReady}},
			},
			want: want{Target: 1, Current: 2, Held: 1},
		},
		"a budget for one reason does not hold scale-down": {
			pool:   pool(1, -1, v1.Budget{Nodes: intstr.FromString("0"), Reasons: []v1.DisruptionReason{v1.DisruptionReasonDrifted}}),
			claims: []claim{{name: "a", launched: true}, {name: "b", launched: true}},
			want:   want{Target: 1, Current: 2, Delete: []string{"a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var machines []*machine.Machine
			for _, c := range tc.claims {
				machines = append(machines, c.machine())
			}
			d := Decide(tc.pool, machines, tc.deleted, now)
			got := want{Target: d.Target, Current: d.Current, Create: d.Create, Held: d.Held, Limited: d.Limited()}
			for _, m := range d.Delete {
				got.Delete = append(got.Delete, m.NodeClaim.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decision (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideFailsClosed: a budget that cannot be evaluated holds every
// launched node.
func TestDecideFailsClosed(t *testing.T) {
	schedule := "not a cron"
	np := pool(0, -1, v1.Budget{Nodes: intstr.FromString("100%"), Schedule: &schedule, Duration: &metav1.Duration{Duration: time.Hour}})
	d := Decide(np, []*machine.Machine{claim{name: "a", launched: true}.machine()}, nil, now)
	if len(d.Delete) != 0 || d.Held != 1 || d.BudgetErr == nil {
		t.Errorf("delete %d held %d err %v; want nothing deleted, 1 held and an error", len(d.Delete), d.Held, d.BudgetErr)
	}
}
