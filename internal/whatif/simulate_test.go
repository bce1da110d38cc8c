package whatif_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// summary is the part of a Result the fixture tests pin down.
type summary struct {
	Launches      []string // nodepool/instance-type/capacity-type: pods
	Placements    []string // pod -> node
	Unschedulable []string
	Disruption    string
	Candidates    []string
	Blocked       []string // node: message
}

func summarize(r *whatif.Result) summary {
	var s summary
	for _, l := range r.Launches {
		s.Launches = append(s.Launches, l.NodePool+"/"+l.InstanceType+"/"+l.CapacityType+": "+strings.Join(l.Pods, ","))
	}
	for _, p := range r.Placements {
		s.Placements = append(s.Placements, p.Pod+" -> "+p.Node)
	}
	for _, u := range r.Unschedulable {
		s.Unschedulable = append(s.Unschedulable, u.Pod)
	}
	s.Disruption = r.Disruption.Command
	for _, c := range r.Disruption.Candidates {
		s.Candidates = append(s.Candidates, c.Node)
	}
	for _, b := range r.Disruption.Blocked {
		msg := b.Message
		if strings.HasPrefix(msg, "Node is nominated") {
			msg = "Node is nominated"
		}
		s.Blocked = append(s.Blocked, b.Node+": "+msg)
	}
	return s
}

func TestSimulateFixtures(t *testing.T) {
	base := filepath.Join("testdata", "base.yaml")
	idle := filepath.Join("testdata", "idle.yaml")
	cases := map[string]struct {
		snapshot string
		changes  func(t *testing.T) whatif.Changes
		want     summary
		// wantCost is the hourly price before and after everything.
		wantBefore, wantAfter float64
	}{
		"pending pods go on the nodes with room, the rest on one new node, and nothing is disrupted while nodes are nominated": {
			snapshot: base,
			want: summary{
				Launches:   []string{"default/c6a.2xlarge/on-demand: jobs/batch-2,jobs/batch-3"},
				Placements: []string{"jobs/batch-0 -> node-b", "jobs/batch-1 -> node-c"},
				Blocked: []string{
					"node-a: PDB shop/web prevents pod evictions (pod shop/web-0)",
					"node-b: Node is nominated",
					"node-c: Node is nominated",
				},
			},
			wantBefore: 0.576, wantAfter: 0.882,
		},
		"a higher-weight spot NodePool takes the launch": {
			snapshot: base,
			changes: func(t *testing.T) whatif.Changes {
				return whatif.Changes{Manifests: load(t, filepath.Join("testdata", "spot-nodepool.yaml"))}
			},
			want: summary{
				Launches:   []string{"spot/c5a.2xlarge/spot: jobs/batch-2,jobs/batch-3"},
				Placements: []string{"jobs/batch-0 -> node-b", "jobs/batch-1 -> node-c"},
				Blocked: []string{
					"node-a: PDB shop/web prevents pod evictions (pod shop/web-0)",
					"node-b: Node is nominated",
					"node-c: Node is nominated",
				},
			},
			wantBefore: 0.576, wantAfter: 0.6751,
		},
		"removing a node makes its pods pending": {
			snapshot: base,
			changes:  func(*testing.T) whatif.Changes { return whatif.Changes{RemoveNodes: []string{"node-a"}} },
			want: summary{
				Launches:   []string{"default/c6a.2xlarge/on-demand: jobs/batch-2,jobs/batch-3,shop/web-1,shop/web-2"},
				Placements: []string{"jobs/batch-0 -> node-b", "jobs/batch-1 -> node-c", "shop/web-0 -> node-b"},
				Blocked:    []string{"node-b: Node is nominated", "node-c: Node is nominated"},
			},
			wantBefore: 0.384, wantAfter: 0.690,
		},
		"an idle cluster consolidates its under-used node": {
			snapshot: idle,
			want: summary{
				Disruption: "Underutilized: deleting 1 node (m5.xlarge; $0.192/h), saving $0.192/h",
				Candidates: []string{"node-b"},
				Blocked: []string{
					"node-a: PDB shop/web prevents pod evictions (pod shop/web-0)",
					"node-c: Pod shop/db-0 has karpenter.sh/do-not-disrupt annotation",
				},
			},
			wantBefore: 0.576, wantAfter: 0.384,
		},
		"scaling a deployment up adds pending replicas": {
			snapshot: idle,
			changes: func(*testing.T) whatif.Changes {
				return whatif.Changes{Scale: []whatif.Scale{{Namespace: "shop", Name: "web", Replicas: 5}}}
			},
			want: summary{
				Placements: []string{"shop/web-whatif-3 -> node-b", "shop/web-whatif-4 -> node-b"},
				Blocked: []string{
					"node-a: PDB shop/web prevents pod evictions (pod shop/web-0)",
					"node-b: Node is nominated",
					"node-c: Pod shop/db-0 has karpenter.sh/do-not-disrupt annotation",
				},
			},
			wantBefore: 0.576, wantAfter: 0.576,
		},
		"a pod no instance type can hold is unschedulable": {
			snapshot: idle,
			changes: func(*testing.T) whatif.Changes {
				huge := whatiftest.Pod("jobs", "huge", "huge", "", "1000", "1Gi")
				return whatif.Changes{Manifests: &whatif.Objects{Pods: []*corev1.Pod{huge}}}
			},
			want: summary{
				Unschedulable: []string{"jobs/huge"},
				Disruption:    "Underutilized: deleting 1 node (m5.xlarge; $0.192/h), saving $0.192/h",
				Candidates:    []string{"node-b"},
				Blocked: []string{
					"node-a: PDB shop/web prevents pod evictions (pod shop/web-0)",
					"node-c: Pod shop/db-0 has karpenter.sh/do-not-disrupt annotation",
				},
			},
			wantBefore: 0.576, wantAfter: 0.384,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := load(t, tc.snapshot)
			var changes whatif.Changes
			if tc.changes != nil {
				changes = tc.changes(t)
			}
			changed, err := whatif.Apply(objs, changes)
			if err != nil {
				t.Fatal(err)
			}
			res, err := whatif.Simulate(changed, whatif.Options{Now: now})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summarize(res)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if !near(res.Cost.Before, tc.wantBefore) || !near(res.Cost.After, tc.wantAfter) {
				t.Errorf("cost: got $%.4f/h -> $%.4f/h, want $%.4f/h -> $%.4f/h", res.Cost.Before, res.Cost.After, tc.wantBefore, tc.wantAfter)
			}
			for _, u := range res.Unschedulable {
				if !strings.Contains(u.Reason, "nodepool default: no instance type has room for") {
					t.Errorf("reason for %s = %q, want the simulator's per-NodePool explanation", u.Pod, u.Reason)
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 0.0005 && b-a < 0.0005 }

func TestSimulateLeavesTheSnapshotAlone(t *testing.T) {
	objs := load(t, filepath.Join("testdata", "base.yaml"))
	before := objs.Count()
	changed, err := whatif.Apply(objs, whatif.Changes{RemoveNodes: []string{"node-a"}, Scale: []whatif.Scale{{Namespace: "shop", Name: "web", Replicas: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whatif.Simulate(changed, whatif.Options{Now: now}); err != nil {
		t.Fatal(err)
	}
	if objs.Count() != before || objs.Node("node-a") == nil || objs.Pod("shop", "web-0").Spec.NodeName != "node-a" {
		t.Errorf("the original objects changed")
	}
}

func TestSimulateWithoutNodePool(t *testing.T) {
	objs := load(t, filepath.Join("testdata", "idle.yaml"))
	objs.NodePools = nil
	if _, err := whatif.Simulate(objs, whatif.Options{Now: now}); !errors.Is(err, whatif.ErrNoNodePool) {
		t.Fatalf("got %v, want ErrNoNodePool", err)
	}
}

func TestApplyBadChanges(t *testing.T) {
	objs := load(t, filepath.Join("testdata", "idle.yaml"))
	cases := map[string]struct {
		changes whatif.Changes
		want    string
	}{
		"unknown node":       {whatif.Changes{RemoveNodes: []string{"node-z"}}, "--remove-node node-z: no Node or NodeClaim of that name"},
		"unknown deployment": {whatif.Changes{Scale: []whatif.Scale{{Namespace: "shop", Name: "nope", Replicas: 1}}}, "deployment shop/nope not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := whatif.Apply(objs, tc.changes)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseScale(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    whatif.Scale
		wantErr bool
	}{
		"namespaced":     {in: "deployment/shop/web=4", want: whatif.Scale{Namespace: "shop", Name: "web", Replicas: 4}},
		"default ns":     {in: "deploy/web=0", want: whatif.Scale{Namespace: "default", Name: "web", Replicas: 0}},
		"not a number":   {in: "deployment/web=x", wantErr: true},
		"negative":       {in: "deployment/web=-1", wantErr: true},
		"not deployment": {in: "statefulset/db=3", wantErr: true},
		"no count":       {in: "deployment/web", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := whatif.ParseScale(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %t", err, tc.wantErr)
			}
			if !tc.wantErr && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestLoadBadInput(t *testing.T) {
	cases := map[string]struct {
		file string
		want whatif.InputError
	}{
		"unknown field": {"bad-field.yaml", whatif.InputError{Document: 2, Line: 24, Field: "spec.disruption.consolidateAftr", Message: "unknown field"}},
		"unknown kind":  {"bad-kind.yaml", whatif.InputError{Document: 1, Line: 2, Field: "kind"}},
		"not YAML":      {"bad-yaml.yaml", whatif.InputError{Document: 1, Line: 5}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			objs := &whatif.Objects{}
			err = whatif.Load(path, data, objs)
			var ie *whatif.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v, want an *InputError", err)
			}
			got := *ie
			want := tc.want
			want.Source = path
			if want.Message == "" {
				got.Message = ""
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if objs.Count() != 0 {
				t.Errorf("a bad file added %d objects", objs.Count())
			}
		})
	}
}

func TestLoadReadsListsAndWriteRoundTrips(t *testing.T) {
	list := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata:
    name: shop
- apiVersion: v1
  kind: Pod
  metadata:
    name: p
    namespace: shop
  spec:
    containers:
    - name: main
      image: pause
      bogus: true
`
	err := whatif.Load("list.yaml", []byte(list), &whatif.Objects{})
	var ie *whatif.InputError
	if !errors.As(err, &ie) || ie.Field != "items[1].spec.containers[0].bogus" || ie.Line != 17 {
		t.Fatalf("got %v, want an unknown field error on line 17 at items[1].spec.containers[0].bogus", err)
	}
	good := strings.Replace(list, "      bogus: true\n", "", 1)
	objs := &whatif.Objects{}
	if err := whatif.Load("list.yaml", []byte(good), objs); err != nil {
		t.Fatal(err)
	}
	if len(objs.Namespaces) != 1 || len(objs.Pods) != 1 {
		t.Fatalf("got %d namespaces and %d pods, want 1 and 1", len(objs.Namespaces), len(objs.Pods))
	}
	var buf strings.Builder
	if err := whatif.Write(&buf, objs); err != nil {
		t.Fatal(err)
	}
	again := &whatif.Objects{}
	if err := whatif.Load("again.yaml", []byte(buf.String()), again); err != nil {
		t.Fatal(err)
	}
	if again.Count() != 2 {
		t.Errorf("round trip kept %d objects, want 2", again.Count())
	}
}
