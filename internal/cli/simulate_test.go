package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-autoscaler/dovetail/internal/whatif"
)

var fixtures = filepath.Join("..", "whatif", "testdata")

// runSimulate runs `dovetail simulate` with args, stdin and a fixed clock.
func runSimulate(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewSimulateCommand(genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	return out.String(), err
}

func TestSimulateCommandOutputs(t *testing.T) {
	base := filepath.Join(fixtures, "base.yaml")
	spot := filepath.Join(fixtures, "spot-nodepool.yaml")
	out, err := runSimulate(t, "", "--snapshot", base, "-f", spot)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodeClaims to launch: 1", "spot      c5a.2xlarge", "jobs/batch-0  node-b", "embedded EC2 catalog", "Cost: $0.5760/h now"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
	// The same what-if from standard input, as JSON and as YAML.
	manifest, err := readFixture("spot-nodepool.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "yaml"} {
		out, err := runSimulate(t, manifest, "--snapshot", base, "-f", "-", "-o", format)
		if err != nil {
			t.Fatal(err)
		}
		var res whatif.Result
		if format == "json" {
			err = json.Unmarshal([]byte(out), &res)
		} else {
			err = yaml.Unmarshal([]byte(out), &res)
		}
		if err != nil {
			t.Fatalf("-o %s: %v\n%s", format, err, out)
		}
		if len(res.Launches) != 1 || res.Launches[0].NodePool != "spot" || res.Launches[0].CapacityType != "spot" {
			t.Errorf("-o %s: launches %+v, want one spot launch from NodePool spot", format, res.Launches)
		}
	}
}

// TestSimulateCommandRehearsesAnOverlay: -f with a NodeOverlay prices the
// plan as the controllers would once it is applied.
func TestSimulateCommandRehearsesAnOverlay(t *testing.T) {
	out, err := runSimulate(t, "", "--snapshot", filepath.Join(fixtures, "base.yaml"), "-f", filepath.Join(fixtures, "discount-overlay.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NodeOverlays applied: m5-discount (NodePool default)", "default   m5.2xlarge     us-east-1a  on-demand      0.1920*",
		"Cost: $0.2880/h now"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
}

func TestSimulateCommandBadInput(t *testing.T) {
	base := filepath.Join(fixtures, "base.yaml")
	cases := map[string]struct {
		args []string
		want string
	}{
		"snapshot with an unknown field": {[]string{"--snapshot", filepath.Join(fixtures, "bad-field.yaml")},
			"bad-field.yaml:24: document 2: field spec.disruption.consolidateAftr: unknown field"},
		"change of an unknown kind": {[]string{"--snapshot", base, "-f", filepath.Join(fixtures, "bad-kind.yaml")},
			"bad-kind.yaml:2: document 1: field kind: kind Service is not one Dovetail reads"},
		"snapshot that is not YAML": {[]string{"--snapshot", filepath.Join(fixtures, "bad-yaml.yaml")},
			"bad-yaml.yaml:5: document 1: not valid YAML"},
		"missing file":     {[]string{"--snapshot", filepath.Join(fixtures, "nope.yaml")}, "reading "},
		"unknown node":     {[]string{"--snapshot", base, "--remove-node", "node-z"}, "no Node or NodeClaim of that name"},
		"bad scale":        {[]string{"--snapshot", base, "--scale", "deployment/shop/web"}, "want deployment/NAMESPACE/NAME=REPLICAS"},
		"bad output":       {[]string{"--snapshot", base, "-o", "wide"}, `--output "wide"`},
		"stdin read twice": {[]string{"--snapshot", "-", "-f", "-"}, "can be read only once"},
		"malformed NodeOverlay": {[]string{"--snapshot", base, "-f", filepath.Join(fixtures, "bad-overlay.yaml")},
			"bad-overlay.yaml:22: document 2: field spec.priceAdjustment: cannot set both spec.price and spec.priceAdjustment"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := runSimulate(t, "", tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSimulateCommandWithoutNodePool(t *testing.T) {
	o := &SimulateOptions{IOStreams: genericiooptions.IOStreams{Out: &bytes.Buffer{}}, Output: outputTable,
		Clock: clocktesting.NewFakePassiveClock(time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC))}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(&whatif.Objects{}); !errors.Is(err, whatif.ErrNoNodePool) {
		t.Fatalf("got %v, want ErrNoNodePool", err)
	}
}

func TestExplainCommandOnSnapshot(t *testing.T) {
	var out bytes.Buffer
	cmd := NewExplainCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}})
	cmd.SetArgs([]string{"node", "node-c", "--snapshot", filepath.Join(fixtures, "idle.yaml")})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"node node-c: Pod shop/db-0 has karpenter.sh/do-not-disrupt annotation", "m5.xlarge (chosen)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func readFixture(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(fixtures, name))
	return string(data), err
}
