package operator

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/dovetail-autoscaler/dovetail/internal/simulator"
)

// Options configure a Dovetail controller process. Every option is a flag,
// and most can also be set from the environment variable Karpenter uses for
// the same setting; a flag given on the command line wins.
type Options struct {
	Kubeconfig              string
	MetricsPort             int
	HealthProbePort         int
	LogLevel                string
	LogFormat               string
	LeaderElect             bool
	LeaderElectionNamespace string
	LeaderElectionName      string
	KubeClientQPS           float32
	KubeClientBurst         int
	BatchIdleDuration       time.Duration
	BatchMaxDuration        time.Duration
	PreferencePolicy        string
	MinValuesPolicy         string
	RegistrationTimeout     time.Duration
	FeatureGates            string
	// EnableProfiling serves Go's pprof profiles under /debug/pprof/ on the
	// metrics port, as Karpenter's ENABLE_PROFILING does.
	EnableProfiling bool
	// LogWriter receives the logs; standard error when nil. Not a flag: the
	// demo sends the controller's logs to a file.
	LogWriter io.Writer
	// DisableWebhook turns the v1beta1 conversion webhook off.
	DisableWebhook bool
	// WebhookPort is the webhook server's port.
	WebhookPort int
	// WebhookServiceName and WebhookServiceNamespace name the Service in
	// front of the webhook server; the serving certificate is issued for it.
	WebhookServiceName      string
	WebhookServiceNamespace string
	// WebhookCertDir holds the serving certificate.
	WebhookCertDir string
	// WebhookLocalURL serves the webhook to a local API server at
	// https://localhost:<WebhookPort>/convert instead of through a Service,
	// writing the certificate into WebhookCertDir (dovetail up, the demo,
	// tests). Not a flag.
	WebhookLocalURL bool
	// WebhookDefaultNodeClass is what an unqualified v1beta1 nodeClassRef
	// means: the cloud provider's default NodeClass. Not a flag.
	WebhookDefaultNodeClass schema.GroupKind
	// AllowRestart lets a process start several operators one after another
	// (controller names are otherwise unique per process), as the demo and
	// the restart tests do. Not a flag.
	AllowRestart bool

	// DisruptionValidationDelay is how long a consolidation or emptiness
	// decision waits before it is re-simulated and carried out.
	DisruptionValidationDelay time.Duration
	// DisruptionReplacementTimeout rolls a disruption command back when its
	// replacement nodes are not initialized in time.
	DisruptionReplacementTimeout time.Duration

	// DryRun is shadow mode: every provisioning and disruption decision is
	// computed and published as events, dovetail_shadow_* metrics and logs,
	// but nothing is launched, tainted, evicted or deleted, and the
	// controllers that write to NodeClaims, Nodes, NodePools or pods do
	// not run, so that Dovetail can watch beside another autoscaler.
	DryRun bool
}

// envNames maps flags to the environment variables that may set them.
func envNames() map[string]string {
	return map[string]string{
		"kubeconfig":                     "KUBECONFIG",
		"metrics-port":                   "METRICS_PORT",
		"health-probe-port":              "HEALTH_PROBE_PORT",
		"log-level":                      "LOG_LEVEL",
		"log-format":                     "LOG_FORMAT",
		"leader-elect":                   "LEADER_ELECT",
		"leader-election-namespace":      "LEADER_ELECTION_NAMESPACE",
		"leader-election-name":           "LEADER_ELECTION_NAME",
		"kube-client-qps":                "KUBE_CLIENT_QPS",
		"kube-client-burst":              "KUBE_CLIENT_BURST",
		"batch-idle-duration":            "BATCH_IDLE_DURATION",
		"batch-max-duration":             "BATCH_MAX_DURATION",
		"preference-policy":              "PREFERENCE_POLICY",
		"min-values-policy":              "MIN_VALUES_POLICY",
		"registration-timeout":           "REGISTRATION_TIMEOUT",
		"feature-gates":                  "FEATURE_GATES",
		"disable-webhook":                "DISABLE_WEBHOOK",
		"webhook-port":                   "WEBHOOK_PORT",
		"webhook-service-name":           "WEBHOOK_SERVICE_NAME",
		"webhook-service-namespace":      "SYSTEM_NAMESPACE",
		"webhook-cert-dir":               "WEBHOOK_CERT_DIR",
		"disruption-validation-delay":    "DISRUPTION_VALIDATION_DELAY",
		"disruption-replacement-timeout": "DISRUPTION_REPLACEMENT_TIMEOUT",
		"dry-run":                        "DRY_RUN",
		"enable-profiling":               "ENABLE_PROFILING",
	}
}

// AddFlags registers the options' flags with their defaults.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to a kubeconfig; in-cluster configuration when empty [KUBECONFIG]")
	fs.IntVar(&o.MetricsPort, "metrics-port", 8080, "port of the Prometheus /metrics endpoint; 0 disables it [METRICS_PORT]")
	fs.IntVar(&o.HealthProbePort, "health-probe-port", 8081, "port of the /healthz and /readyz probes; 0 disables them [HEALTH_PROBE_PORT]")
	fs.StringVar(&o.LogLevel, "log-level", "info", "log level: debug, info or error [LOG_LEVEL]")
	fs.StringVar(&o.LogFormat, "log-format", "json", "log format: json or console [LOG_FORMAT]")
	fs.BoolVar(&o.LeaderElect, "leader-elect", true, "elect a leader among replicas; only the leader takes decisions [LEADER_ELECT]")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "kube-system", "namespace of the leader-election lease [LEADER_ELECTION_NAMESPACE]")
	fs.StringVar(&o.LeaderElectionName, "leader-election-name", "dovetail-leader-election", "name of the leader-election lease [LEADER_ELECTION_NAME]")
	fs.Float32Var(&o.KubeClientQPS, "kube-client-qps", 200, "queries per second to the API server [KUBE_CLIENT_QPS]")
	fs.IntVar(&o.KubeClientBurst, "kube-client-burst", 300, "burst of queries to the API server [KUBE_CLIENT_BURST]")
	fs.DurationVar(&o.BatchIdleDuration, "batch-idle-duration", time.Second, "close a provisioning batch when no pod arrived for this long [BATCH_IDLE_DURATION]")
	fs.DurationVar(&o.BatchMaxDuration, "batch-max-duration", 10*time.Second, "close a provisioning batch this long after it opened [BATCH_MAX_DURATION]")
	fs.StringVar(&o.PreferencePolicy, "preference-policy", string(simulator.PreferencesRespect), "Respect or Ignore pods' preferences when launching nodes [PREFERENCE_POLICY]")
	fs.StringVar(&o.MinValuesPolicy, "min-values-policy", string(simulator.MinValuesStrict), "Strict or BestEffort handling of requirements' minValues [MIN_VALUES_POLICY]")
	fs.DurationVar(&o.RegistrationTimeout, "registration-timeout", 15*time.Minute, "delete a NodeClaim whose node has not registered this long after launch [REGISTRATION_TIMEOUT]")
	fs.BoolVar(&o.DisableWebhook, "disable-webhook", false, "do not serve the v1beta1 <-> v1 conversion webhook [DISABLE_WEBHOOK]")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "port of the conversion webhook server [WEBHOOK_PORT]")
	fs.StringVar(&o.WebhookServiceName, "webhook-service-name", "dovetail", "Service in front of the webhook server [WEBHOOK_SERVICE_NAME]")
	fs.StringVar(&o.WebhookServiceNamespace, "webhook-service-namespace", "kube-system", "namespace of that Service and of the webhook's certificate Secret [SYSTEM_NAMESPACE]")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "directory of the webhook's serving certificate (default: controller-runtime's temporary directory) [WEBHOOK_CERT_DIR]")
	fs.StringVar(&o.FeatureGates, "feature-gates", "", "comma-separated Gate=true|false pairs: SpotToSpotConsolidation (default false), NodeRepair (default true), NodeOverlay (default true), EarlyProvisioning (default true), MultiNodeReplacements (default false), ConsolidationCandidateTaint (default true) [FEATURE_GATES]")
	fs.DurationVar(&o.DisruptionValidationDelay, "disruption-validation-delay", 15*time.Second, "wait this long before re-simulating and carrying out a consolidation decision [DISRUPTION_VALIDATION_DELAY]")
	fs.DurationVar(&o.DisruptionReplacementTimeout, "disruption-replacement-timeout", 10*time.Minute, "roll a disruption back when its replacement nodes are not initialized this long after launch [DISRUPTION_REPLACEMENT_TIMEOUT]")
	fs.BoolVar(&o.EnableProfiling, "enable-profiling", false, "serve Go's pprof profiles under /debug/pprof/ on the metrics port (needs --metrics-port) [ENABLE_PROFILING]")
	fs.BoolVar(&o.DryRun, "dry-run", false, "shadow mode: compute every provisioning and disruption decision and publish it as events, dovetail_shadow_* metrics and logs, "+
		"but launch, taint, evict and delete nothing and write nothing to NodeClaims, Nodes, NodePools or pods (safe beside another autoscaler) [DRY_RUN]")
}

// ApplyEnvironment sets every flag that was not given on the command line
// from its environment variable, if that is set. Errors name the variable.
func ApplyEnvironment(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var errs []error
	names := envNames()
	fs.VisitAll(func(f *pflag.Flag) {
		env, ok := names[f.Name]
		if !ok {
			env, ok = UsageEnvName(f.Usage)
		}
		if !ok || f.Changed {
			return
		}
		value, set := lookup(env)
		if !set {
			return
		}
		if err := fs.Set(f.Name, value); err != nil {
			errs = append(errs, fmt.Errorf("environment variable %s=%q: %w", env, value, err))
		}
	})
	return errors.Join(errs...)
}

// UsageEnvName returns the environment variable a flag's usage names in a
// trailing "[NAME]", the convention every Dovetail flag follows, so that
// flags registered outside this package (a cloud provider's settings) are
// settable from the environment too.
func UsageEnvName(usage string) (string, bool) {
	usage = strings.TrimSpace(usage)
	if !strings.HasSuffix(usage, "]") {
		return "", false
	}
	i := strings.LastIndex(usage, "[")
	if i < 0 {
		return "", false
	}
	name := usage[i+1 : len(usage)-1]
	if name == "" || strings.Trim(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return "", false
	}
	return name, true
}

// Validate checks the options, naming the offending flag.
func (o *Options) Validate() error {
	var errs []error
	for name, port := range map[string]int{"--metrics-port": o.MetricsPort, "--health-probe-port": o.HealthProbePort} {
		if port < 0 || port > 65535 {
			errs = append(errs, fmt.Errorf("%s %d is out of range 0-65535", name, port))
		}
	}
	if o.EnableProfiling && o.MetricsPort == 0 {
		errs = append(errs, errors.New("--enable-profiling serves on the metrics port, which --metrics-port 0 disables"))
	}
	switch o.LogLevel {
	case "debug", "info", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q is not one of debug, info, error", o.LogLevel))
	}
	switch o.LogFormat {
	case "json", "console":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q is not one of json, console", o.LogFormat))
	}
	if o.BatchIdleDuration <= 0 || o.BatchMaxDuration <= 0 {
		errs = append(errs, fmt.Errorf("--batch-idle-duration (%v) and --batch-max-duration (%v) must be positive", o.BatchIdleDuration, o.BatchMaxDuration))
	} else if o.BatchIdleDuration > o.BatchMaxDuration {
		errs = append(errs, fmt.Errorf("--batch-idle-duration %v is longer than --batch-max-duration %v", o.BatchIdleDuration, o.BatchMaxDuration))
	}
	switch simulator.PreferencePolicy(o.PreferencePolicy) {
	case simulator.PreferencesRespect, simulator.PreferencesIgnore:
	default:
		errs = append(errs, fmt.Errorf("--preference-policy %q is not one of Respect, Ignore", o.PreferencePolicy))
	}
	switch simulator.MinValuesPolicy(o.MinValuesPolicy) {
	case simulator.MinValuesStrict, simulator.MinValuesBestEffort:
	default:
		errs = append(errs, fmt.Errorf("--min-values-policy %q is not one of Strict, BestEffort", o.MinValuesPolicy))
	}
	if o.KubeClientQPS <= 0 || o.KubeClientBurst <= 0 {
		errs = append(errs, fmt.Errorf("--kube-client-qps and --kube-client-burst must be positive"))
	}
	if !o.DisableWebhook && (o.WebhookPort <= 0 || o.WebhookPort > 65535) {
		errs = append(errs, fmt.Errorf("--webhook-port %d is out of range 1-65535", o.WebhookPort))
	}
	if !o.DisableWebhook && !o.WebhookLocalURL && (o.WebhookServiceName == "" || o.WebhookServiceNamespace == "") {
		errs = append(errs, fmt.Errorf("--webhook-service-name and --webhook-service-namespace must be set unless --disable-webhook"))
	}
	if o.RegistrationTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--registration-timeout must be positive"))
	}
	if o.DisruptionValidationDelay < 0 {
		errs = append(errs, fmt.Errorf("--disruption-validation-delay must not be negative"))
	}
	if o.DisruptionReplacementTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--disruption-replacement-timeout must be positive"))
	}
	if _, err := o.Gates(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// FeatureGates are the optional behaviours a user may switch on or off.
type FeatureGates struct {
	// SpotToSpotConsolidation lets consolidation replace a spot node with a
	// cheaper spot node. Off by default, as in Karpenter.
	SpotToSpotConsolidation bool
	// NodeRepair replaces nodes that have been unhealthy for longer than the
	// cloud provider's repair policies tolerate. On by default in Dovetail
	// (Karpenter's default is off); NodeRepair=false turns it off.
	NodeRepair bool
	// NodeOverlay applies the cluster's NodeOverlays (karpenter.sh/v1alpha1)
	// to the instance types scheduling, consolidation and launches see. On
	// by default in Dovetail (Karpenter's default is off); NodeOverlay=false
	// turns it off.
	NodeOverlay bool
	// EarlyProvisioning provisions, with the first pods of a ReplicaSet, Job
	// or StatefulSet revision the kube-scheduler marks unschedulable, their
	// siblings it has not tried yet and the replicas their ReplicaSet has
	// yet to create, and lets only a group's first marked pod open a
	// provisioning batch. A Dovetail gate, on by default;
	// EarlyProvisioning=false waits for the scheduler to mark every pod, as
	// Karpenter does.
	EarlyProvisioning bool
	// MultiNodeReplacements lets multi-node consolidation replace its
	// candidates with several cheaper nodes, fewer than it removes, where
	// Karpenter launches at most one. A Dovetail gate, off by default: it
	// reaches a cheaper cluster (within 2% of a fresh plan at 500-2,000
	// nodes against 10-15% in the convergence benchmark), with fewer pods
	// moved there, but departs from Karpenter's one-node moves.
	MultiNodeReplacements bool
	// ConsolidationCandidateTaint puts a PreferNoSchedule taint
	// (disruption.dovetail.dev/consolidation-candidate) on the nodes
	// consolidation means to remove once its budgets allow, so that the
	// kube-scheduler places new pods, the replacements of evicted pods
	// among them, elsewhere rather than on nodes that will be drained next.
	// A Dovetail gate, on by default; false leaves the nodes untainted, as
	// Karpenter does.
	ConsolidationCandidateTaint bool
}

// DefaultFeatureGates are the gates when --feature-gates does not name them.
func DefaultFeatureGates() FeatureGates {
	return FeatureGates{NodeRepair: true, NodeOverlay: true, EarlyProvisioning: true, ConsolidationCandidateTaint: true}
}

// Gates parses --feature-gates over DefaultFeatureGates.
func (o *Options) Gates() (FeatureGates, error) {
	g := DefaultFeatureGates()
	if strings.TrimSpace(o.FeatureGates) == "" {
		return g, nil
	}
	for _, pair := range strings.Split(o.FeatureGates, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || (value != "true" && value != "false") {
			return g, fmt.Errorf("--feature-gates: %q is not Gate=true or Gate=false", pair)
		}
		switch name {
		case "SpotToSpotConsolidation":
			g.SpotToSpotConsolidation = value == "true"
		case "NodeRepair":
			g.NodeRepair = value == "true"
		case "NodeOverlay":
			g.NodeOverlay = value == "true"
		case "EarlyProvisioning":
			g.EarlyProvisioning = value == "true"
		case "MultiNodeReplacements":
			g.MultiNodeReplacements = value == "true"
		case "ConsolidationCandidateTaint":
			g.ConsolidationCandidateTaint = value == "true"
		default:
			return g, fmt.Errorf("--feature-gates: unknown gate %q (known: SpotToSpotConsolidation, NodeRepair, NodeOverlay, EarlyProvisioning, MultiNodeReplacements, ConsolidationCandidateTaint)", name)
		}
	}
	return g, nil
}
