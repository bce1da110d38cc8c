package whatif_test

import (
	"bytes"
	"flag"
	"os"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
	"github.com/dovetail-autoscaler/dovetail/internal/whatif/whatiftest"
)

// largeSnapshot, when set, names a file TestWriteLargeSnapshot writes the
// benchmark's cluster to, for timing `dovetail simulate --snapshot` itself.
var largeSnapshot = flag.String("large-snapshot", "", "write the 1,000-node, 10,000-pod snapshot to this file")

// largeCluster is 1,000 m5.2xlarge nodes running 9 pods each and 1,000
// pending pods: 10,000 pods.
func largeCluster(tb testing.TB) []byte {
	tb.Helper()
	objs, err := whatiftest.Large(catalogTypes(tb), 1000, 9, 1000)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := whatif.Write(&buf, objs); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestWriteLargeSnapshot(t *testing.T) {
	if *largeSnapshot == "" {
		t.Skip("no -large-snapshot file given")
	}
	if err := os.WriteFile(*largeSnapshot, largeCluster(t), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSimulateLarge measures what `dovetail simulate --snapshot` does
// on a 1,000-node, 10,000-pod cluster: read the YAML, apply a change
// (remove a node) and run provisioning and disruption.
func BenchmarkSimulateLarge(b *testing.B) {
	data := largeCluster(b)
	b.ResetTimer()
	for b.Loop() {
		objs := &whatif.Objects{}
		if err := whatif.Load("large.yaml", data, objs); err != nil {
			b.Fatal(err)
		}
		changed, err := whatif.Apply(objs, whatif.Changes{RemoveNodes: []string{"node-0000"}})
		if err != nil {
			b.Fatal(err)
		}
		res, err := whatif.Simulate(changed, whatif.Options{Now: now})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Launches) == 0 {
			b.Fatal("no launch for 1,000 pending pods")
		}
	}
}
