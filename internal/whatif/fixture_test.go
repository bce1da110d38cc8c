package whatif_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// update rewrites the snapshot fixtures in testdata from baseCluster.
var update = flag.Bool("update", false, "rewrite testdata/*.yaml")

// now is the decision time of every test: Monday 6 January 2025, 12:00 UTC.
var now = time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

func catalogTypes(t testing.TB) []*cloudprovider.InstanceType {
	t.Helper()
	types, err := whatif.CatalogInstanceTypes()
	if err != nil {
		t.Fatal(err)
	}
	return types
}

func instanceType(t testing.TB, name string) *cloudprovider.InstanceType {
	t.Helper()
	for _, it := range catalogTypes(t) {
		if it.Name == name {
			return it
		}
	}
	t.Fatalf("no instance type %s", name)
	return nil
}

// baseCluster is testdata/base.yaml: one NodePool (default, on-demand c
// and m, consolidateAfter 5m) and three m5.xlarge nodes:
//
//   - node-a runs web-0..2 (1 cpu, 2Gi each), which a PDB allowing no
//     disruption covers;
//   - node-b runs api-0 (500m, 1Gi) only: under-used;
//   - node-c runs db-0 (1 cpu, 2Gi), annotated karpenter.sh/do-not-disrupt;
//
// and four pending pods batch-0..3 of 2 cpu and 4Gi.
func baseCluster(t testing.TB) *whatif.Objects {
	t.Helper()
	m5 := instanceType(t, "m5.xlarge")
	o := &whatif.Objects{
		NodeClasses: []*unstructured.Unstructured{whatiftest.NodeClass("default", true)},
		NodePools:   []*v1.NodePool{whatiftest.NodePool("default", "default", 0, "5m")},
	}
	for _, m := range []struct{ name, zone string }{{"node-a", "us-east-1a"}, {"node-b", "us-east-1b"}, {"node-c", "us-east-1c"}} {
		n, nc := whatiftest.Machine(m.name, "default", m5, m.zone, v1.CapacityTypeOnDemand, "m5.2xlarge", "c5.2xlarge", "m6i.xlarge")
		o.Nodes, o.NodeClaims = append(o.Nodes, n), append(o.NodeClaims, nc)
	}
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		o.Pods = append(o.Pods, whatiftest.Pod("shop", name, "web", "node-a", "1", "2Gi"))
	}
	o.Pods = append(o.Pods, whatiftest.Pod("shop", "api-0", "api", "node-b", "500m", "1Gi"))
	db := whatiftest.Pod("shop", "db-0", "db", "node-c", "1", "2Gi")
	db.Annotations = map[string]string{v1.DoNotDisruptAnnotationKey: "true"}
	o.Pods = append(o.Pods, db)
	for _, name := range []string{"batch-0", "batch-1", "batch-2", "batch-3"} {
		o.Pods = append(o.Pods, whatiftest.Pod("jobs", name, "batch", "", "2", "4Gi"))
	}
	o.Deployments = append(o.Deployments, whatiftest.Deployment("shop", "web", 3, "1", "2Gi"))
	o.PDBs = append(o.PDBs, &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: new(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0},
	})
	return o
}

// TestFixturesAreCurrent checks testdata/base.yaml against baseCluster,
// and testdata/idle.yaml against it without the pending pods;
// run with -update to rewrite it.
func TestFixturesAreCurrent(t *testing.T) {
	idle := baseCluster(t)
	idle.Pods = slices.DeleteFunc(idle.Pods, func(p *corev1.Pod) bool { return p.Namespace == "jobs" })
	for name, o := range map[string]*whatif.Objects{"base.yaml": baseCluster(t), "idle.yaml": idle} {
		checkFixture(t, name, o)
	}
}

func checkFixture(t *testing.T, name string, o *whatif.Objects) {
	t.Helper()
	var buf bytes.Buffer
	if err := whatif.Write(&buf, o); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Errorf("%s is stale; run go test ./internal/whatif -run TestFixturesAreCurrent -update", path)
	}
}

func load(t *testing.T, paths ...string) *whatif.Objects {
	t.Helper()
	o := &whatif.Objects{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := whatif.Load(p, data, o); err != nil {
			t.Fatal(err)
		}
	}
	return o
}
