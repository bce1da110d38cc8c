package cli

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

// TestSimulateAgainstLive compares the base fixture (three m5.xlarge on
// demand at $0.192/h each) with a fresh plan for its pods, as a table,
// JSON and YAML, and refuses the flags that make no sense with it.
func TestSimulateAgainstLive(t *testing.T) {
	objs := loadFixture(t, "base.yaml")
	c, err := CompareWithLive(objs, nil, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if c.Live.Nodes != 3 || !nearly(c.Live.PricePerHour, 3*0.192) || c.Live.Unpriced != 0 {
		t.Errorf("live fleet = %+v, want 3 nodes at $0.576/h", c.Live)
	}
	if len(c.Live.Groups) != 1 || c.Live.Groups[0] != (FleetGroup{NodePool: "default", InstanceType: "m5.xlarge", CapacityType: "on-demand", Nodes: 3, PricePerHour: c.Live.PricePerHour}) {
		t.Errorf("live groups = %+v", c.Live.Groups)
	}
	// The fresh plan's side is the sum of its groups (whatever the
	// simulator picks: today one c6a.4xlarge for all the pods).
	sum, nodes := 0.0, 0
	for _, g := range c.Dovetail.Groups {
		sum, nodes = sum+g.PricePerHour, nodes+g.Nodes
	}
	if c.Dovetail.Nodes == 0 || nodes != c.Dovetail.Nodes || !nearly(sum, c.Dovetail.PricePerHour) || sum <= 0 {
		t.Errorf("Dovetail fleet = %+v, want nodes whose groups add up", c.Dovetail)
	}
	if c.Pods == 0 || len(c.Unschedulable) != 0 {
		t.Errorf("pods = %d, unschedulable = %v; want every pod placed", c.Pods, c.Unschedulable)
	}
	if !nearly(c.PriceDeltaPerHour, c.Dovetail.PricePerHour-c.Live.PricePerHour) || c.NodesDelta != c.Dovetail.Nodes-3 ||
		!nearly(c.PriceDeltaPercent, 100*c.PriceDeltaPerHour/c.Live.PricePerHour) {
		t.Errorf("difference = %+d nodes, %v $/h (%v%%)", c.NodesDelta, c.PriceDeltaPerHour, c.PriceDeltaPercent)
	}

	base := filepath.Join(fixtures, "base.yaml")
	// The command reads a cluster; on a snapshot it refuses, so the table
	// and the formats are checked through RunAgainstLive on the objects.
	for _, format := range []string{"table", "json", "yaml"} {
		var out strings.Builder
		o := &SimulateOptions{Output: format, Clock: fixedClock()}
		o.Out = &out
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := o.RunAgainstLive(objs); err != nil {
			t.Fatal(err)
		}
		switch format {
		case "table":
			for _, want := range []string{"Live cluster now: 3 node(s), $0.5760/h", "default   m5.xlarge", "Dovetail would run:", "Difference: ", "embedded EC2 catalog"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("table lacks %q:\n%s", want, out.String())
				}
			}
		default:
			var got LiveComparison
			if format == "json" {
				err = json.Unmarshal([]byte(out.String()), &got)
			} else {
				err = yaml.Unmarshal([]byte(out.String()), &got)
			}
			if err != nil || got.Live.Nodes != 3 || got.Dovetail.Nodes != c.Dovetail.Nodes || !nearly(got.PriceDeltaPerHour, c.PriceDeltaPerHour) {
				t.Errorf("%s output: %v %+v\n%s", format, err, got, out.String())
			}
		}
	}

	// Flags that make no sense with --against-live are refused, saying why.
	for _, args := range [][]string{
		{"--against-live", "--snapshot", base},
		{"--against-live", "--remove-node", "node-a"},
		{"--against-live", "--scale", "deployment/default/web=3"},
	} {
		_, err := runSimulate(t, "", args...)
		if !errors.Is(err, errAgainstLiveFlags) || !strings.Contains(err.Error(), args[1]) {
			t.Errorf("simulate %v: %v, want an error naming %s", args, err, args[1])
		}
	}
}

// TestSimulateAgainstLiveWithOverlays: the cluster's NodeOverlays price
// both sides, as the controllers would; one given with -f only Dovetail's.
func TestSimulateAgainstLiveWithOverlays(t *testing.T) {
	discount := loadFixture(t, "discount-overlay.yaml")
	objs := loadFixture(t, "base.yaml")
	objs.NodeOverlays = discount.NodeOverlays
	c, err := CompareWithLive(objs, nil, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if !nearly(c.Live.PricePerHour, 3*0.096) {
		t.Errorf("live fleet = %+v, want 3 m5.xlarge at the overlaid $0.096/h", c.Live)
	}
	if len(c.Overlays) != 1 || c.Overlays[0].Name != "m5-discount" {
		t.Errorf("overlays = %+v, want m5-discount", c.Overlays)
	}
	var out strings.Builder
	if err := WriteLiveComparison(&out, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "NodeOverlays applied: m5-discount (NodePool default).") {
		t.Errorf("table lacks the overlays:\n%s", out.String())
	}

	rehearsed, err := CompareWithLive(loadFixture(t, "base.yaml"), discount, fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	if !nearly(rehearsed.Live.PricePerHour, 3*0.192) || len(rehearsed.Overlays) != 1 {
		t.Errorf("with the overlay from -f: live = %+v, overlays = %+v; want the live nodes at list price, the overlay on Dovetail's side",
			rehearsed.Live, rehearsed.Overlays)
	}
}

func nearly(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }

// fixedNow is the moment of the comparisons.
var fixedNow = time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)

func fixedClock() clock.PassiveClock { return clocktesting.NewFakePassiveClock(fixedNow) }

// loadFixture reads a snapshot fixture of internal/whatif.
func loadFixture(t *testing.T, name string) *whatif.Objects {
	t.Helper()
	data, err := readFixture(name)
	if err != nil {
		t.Fatal(err)
	}
	objs := &whatif.Objects{}
	if err := whatif.Load(name, []byte(data), objs); err != nil {
		t.Fatal(err)
	}
	return objs
}
