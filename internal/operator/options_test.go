package operator

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args []string, env map[string]string) (*Options, error) {
	t.Helper()
	o := &Options{}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := ApplyEnvironment(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		return nil, err
	}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func TestOptionsFromFlagsAndEnvironment(t *testing.T) {
	o, err := parse(t, []string{"--batch-idle-duration=2s"}, map[string]string{
		"BATCH_IDLE_DURATION": "5s", "BATCH_MAX_DURATION": "20s", "LOG_LEVEL": "debug", "FEATURE_GATES": "SpotToSpotConsolidation=true",
	})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if o.BatchIdleDuration != 2*time.Second {
		t.Errorf("flag did not win over the environment: idle %v", o.BatchIdleDuration)
	}
	if o.BatchMaxDuration != 20*time.Second || o.LogLevel != "debug" {
		t.Errorf("environment not applied: max %v level %s", o.BatchMaxDuration, o.LogLevel)
	}
	gates, _ := o.Gates()
	if !gates.SpotToSpotConsolidation {
		t.Error("feature gate not parsed")
	}
	if o.MetricsPort != 8080 || o.HealthProbePort != 8081 || !o.LeaderElect {
		t.Errorf("defaults: metrics %d health %d leader %v", o.MetricsPort, o.HealthProbePort, o.LeaderElect)
	}
}

func TestOptionsRejectBadInput(t *testing.T) {
	cases := map[string]struct {
		args    []string
		env     map[string]string
		wantErr string
	}{
		"bad duration flag":         {args: []string{"--batch-max-duration=soon"}, wantErr: `invalid argument "soon" for "--batch-max-duration"`},
		"bad duration environment":  {env: map[string]string{"BATCH_MAX_DURATION": "soon"}, wantErr: `environment variable BATCH_MAX_DURATION="soon"`},
		"idle longer than max":      {args: []string{"--batch-idle-duration=20s", "--batch-max-duration=10s"}, wantErr: "--batch-idle-duration 20s is longer than --batch-max-duration 10s"},
		"unknown log level":         {args: []string{"--log-level=loud"}, wantErr: `--log-level "loud" is not one of`},
		"unknown preference":        {env: map[string]string{"PREFERENCE_POLICY": "Maybe"}, wantErr: `--preference-policy "Maybe"`},
		"unknown min values":        {args: []string{"--min-values-policy=Lenient"}, wantErr: `--min-values-policy "Lenient"`},
		"port out of range":         {args: []string{"--metrics-port=70000"}, wantErr: "--metrics-port 70000 is out of range"},
		"unknown feature gate":      {args: []string{"--feature-gates=Teleport=true"}, wantErr: `unknown gate "Teleport"`},
		"malformed feature gate":    {args: []string{"--feature-gates=SpotToSpotConsolidation"}, wantErr: "is not Gate=true or Gate=false"},
		"unknown flag":              {args: []string{"--bogus"}, wantErr: "unknown flag: --bogus"},
		"profiling without metrics": {args: []string{"--enable-profiling", "--metrics-port=0"}, wantErr: "--enable-profiling serves on the metrics port"},
		"bad profiling environment": {env: map[string]string{"ENABLE_PROFILING": "maybe"}, wantErr: `environment variable ENABLE_PROFILING="maybe"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args, tc.env)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestUsageEnvName(t *testing.T) {
	cases := map[string]struct {
		usage string
		want  string
		ok    bool
	}{
		"named":           {usage: "cluster name [CLUSTER_NAME]", want: "CLUSTER_NAME", ok: true},
		"trailing spaces": {usage: "queue [INTERRUPTION_QUEUE]  ", want: "INTERRUPTION_QUEUE", ok: true},
		"none":            {usage: "a flag without an environment variable"},
		"lower case":      {usage: "see [the docs]"},
		"empty brackets":  {usage: "odd []"},
		"not at the end":  {usage: "[X] then text"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := UsageEnvName(tc.usage)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("UsageEnvName(%q) = %q, %v; want %q, %v", tc.usage, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// parseGates parses the flags and environment and returns the feature
// gates they set, failing the test on any error.
func parseGates(t *testing.T, args []string, env map[string]string) FeatureGates {
	t.Helper()
	o, err := parse(t, args, env)
	if err != nil {
		t.Fatalf("parse %v %v: %v", args, env, err)
	}
	g, err := o.Gates()
	if err != nil {
		t.Fatalf("gates of %v %v: %v", args, env, err)
	}
	return g
}

// TestNodeRepairGate: NodeRepair is on unless --feature-gates (or
// FEATURE_GATES, as the chart renders it) turns it off; naming one gate
// leaves the others at their defaults.
func TestNodeRepairGate(t *testing.T) {
	cases := map[string]struct {
		args       []string
		env        map[string]string
		repair     bool
		spotToSpot bool
	}{
		"default":                  {repair: true},
		"flag turns it off":        {args: []string{"--feature-gates=NodeRepair=false"}, repair: false},
		"environment turns it off": {env: map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=false,NodeRepair=false"}, repair: false},
		"other gate named only":    {args: []string{"--feature-gates=SpotToSpotConsolidation=true"}, repair: true, spotToSpot: true},
		"explicitly on":            {env: map[string]string{"FEATURE_GATES": "NodeRepair=true"}, repair: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := parseGates(t, tc.args, tc.env)
			if g.NodeRepair != tc.repair || g.SpotToSpotConsolidation != tc.spotToSpot {
				t.Errorf("gates = %+v, want NodeRepair %v SpotToSpotConsolidation %v", g, tc.repair, tc.spotToSpot)
			}
		})
	}
}

func TestDryRunFromFlagOrEnvironment(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want bool
	}{
		"default":               {want: false},
		"flag":                  {args: []string{"--dry-run"}, want: true},
		"environment":           {env: map[string]string{"DRY_RUN": "true"}, want: true},
		"flag over environment": {args: []string{"--dry-run=false"}, env: map[string]string{"DRY_RUN": "true"}, want: false},
	} {
		o, err := parse(t, tc.args, tc.env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if o.DryRun != tc.want {
			t.Errorf("%s: DryRun = %v, want %v", name, o.DryRun, tc.want)
		}
	}
	if _, err := parse(t, nil, map[string]string{"DRY_RUN": "maybe"}); err == nil || !strings.Contains(err.Error(), "DRY_RUN") {
		t.Errorf("DRY_RUN=maybe: %v, want an error naming the variable", err)
	}
}

// TestNodeOverlayGate: NodeOverlay is on unless --feature-gates turns it
// off, and Karpenter's spelling NodeOverlay=true is accepted.
func TestNodeOverlayGate(t *testing.T) {
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
		want bool
	}{
		"default":           {want: true},
		"flag turns it off": {args: []string{"--feature-gates=NodeOverlay=false"}, want: false},
		"as Karpenter sets it": {env: map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true"},
			want: true},
	} {
		g := parseGates(t, tc.args, tc.env)
		if g.NodeOverlay != tc.want {
			t.Errorf("%s: NodeOverlay = %v, want %v", name, g.NodeOverlay, tc.want)
		}
	}
	if _, err := parse(t, []string{"--feature-gates=NodeOverlay=maybe"}, nil); err == nil || !strings.Contains(err.Error(), "feature-gates") {
		t.Errorf("NodeOverlay=maybe: %v, want an error naming --feature-gates", err)
	}
}

// TestDovetailGates: EarlyProvisioning and ConsolidationCandidateTaint are
// on and MultiNodeReplacements off unless --feature-gates or FEATURE_GATES
// says otherwise; a value other than true or false is refused naming the
// flag.
func TestDovetailGates(t *testing.T) {
	for name, tc := range map[string]struct {
		args                []string
		env                 map[string]string
		early, multi, taint bool
	}{
		"default":                            {early: true, taint: true},
		"flag turns early off":               {args: []string{"--feature-gates=EarlyProvisioning=false"}, early: false, taint: true},
		"environment turns it off":           {env: map[string]string{"FEATURE_GATES": "NodeRepair=true,EarlyProvisioning=false"}, early: false, taint: true},
		"Karpenter's gates only":             {env: map[string]string{"FEATURE_GATES": "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true"}, early: true, taint: true},
		"flag turns multi on":                {args: []string{"--feature-gates=MultiNodeReplacements=true"}, early: true, multi: true, taint: true},
		"environment turns it on":            {env: map[string]string{"FEATURE_GATES": "EarlyProvisioning=false,MultiNodeReplacements=true"}, multi: true, taint: true},
		"flag turns the candidate taint off": {args: []string{"--feature-gates=ConsolidationCandidateTaint=false"}, early: true},
	} {
		g := parseGates(t, tc.args, tc.env)
		if g.EarlyProvisioning != tc.early || g.MultiNodeReplacements != tc.multi || g.ConsolidationCandidateTaint != tc.taint {
			t.Errorf("%s: EarlyProvisioning = %v, MultiNodeReplacements = %v, ConsolidationCandidateTaint = %v; want %v, %v, %v", name,
				g.EarlyProvisioning, g.MultiNodeReplacements, g.ConsolidationCandidateTaint, tc.early, tc.multi, tc.taint)
		}
	}
	for _, gate := range []string{"EarlyProvisioning=yes", "MultiNodeReplacements=1", "ConsolidationCandidateTaint=on"} {
		if _, err := parse(t, []string{"--feature-gates=" + gate}, nil); err == nil || !strings.Contains(err.Error(), "feature-gates") {
			t.Errorf("%s: %v, want an error naming --feature-gates", gate, err)
		}
	}
}
