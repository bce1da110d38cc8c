package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion/webhook"
	"github.com/dovetail-autoscaler/dovetail/internal/events"
	"github.com/dovetail-autoscaler/dovetail/internal/indexes"
	"github.com/dovetail-autoscaler/dovetail/internal/lazylog"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/state"
)

// Operator is a configured controller process, ready for controllers to be
// registered with its Manager and then started.
type Operator struct {
	Options    Options
	Logger     logr.Logger
	Clock      clock.WithTicker
	Scheme     *runtime.Scheme
	RESTConfig *rest.Config
	Manager    manager.Manager
	// KubeClient is the manager's cached client.
	KubeClient client.Client
	Recorder   events.Recorder
	Metrics    *metrics.Metrics
	// Registry holds Dovetail's metrics, served with controller-runtime's on /metrics.
	Registry *prometheus.Registry
	// Webhook is the conversion webhook, nil when disabled. Its CRDs must be
	// installed with crdinstall.WithWebhookConversion(crds, Webhook.ClientConfig()).
	Webhook *webhook.Webhook
}

// NewScheme returns a scheme with the built-in kinds and every served Dovetail kind.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, v1.AddToScheme, v1beta1.AddToScheme,
		awsv1.AddToScheme, awsv1beta1.AddToScheme, kwokv1alpha1.AddToScheme, v1alpha1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return scheme, nil
}

// NewLogger builds the process logger: JSON (or console) at the given level,
// written to w (standard error when nil). Every line is written: unlike
// controller-runtime's production logger it does not sample, which in a
// scale-out dropped all but about a hundred a second of lines with the same
// message ("Created NodeClaim" for a 10,000-pod plan), the very lines an
// operator reads to learn why each node exists. Its WithValues is deferred
// until a line is written (lazylog), so that the logger controller-runtime
// derives for each reconcile costs nothing unless the reconcile logs.
func NewLogger(level, format string, w io.Writer) logr.Logger {
	lvl := zapcore.InfoLevel
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "error":
		lvl = zapcore.ErrorLevel
	}
	if w == nil {
		w = os.Stderr
	}
	encoder := zapcore.NewJSONEncoder(uberzap.NewProductionEncoderConfig())
	if format == "console" {
		encoder = zapcore.NewConsoleEncoder(uberzap.NewDevelopmentEncoderConfig())
	}
	sink := zapcore.Lock(zapcore.AddSync(w))
	core := zapcore.NewCore(&zap.KubeAwareEncoder{Encoder: encoder}, sink, lvl)
	return lazylog.New(zapr.NewLogger(uberzap.New(core, uberzap.AddStacktrace(zapcore.ErrorLevel), uberzap.ErrorOutput(sink))))
}

// New builds an operator. restConfig may be nil: it is then read from
// --kubeconfig or the in-cluster environment.
func New(ctx context.Context, opts Options, restConfig *rest.Config) (*Operator, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	logger := NewLogger(opts.LogLevel, opts.LogFormat, opts.LogWriter)
	ctrl.SetLogger(logger)
	if restConfig == nil {
		var err error
		restConfig, err = loadRESTConfig(opts.Kubeconfig)
		if err != nil {
			return nil, err
		}
	}
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = opts.KubeClientQPS, opts.KubeClientBurst
	restConfig.UserAgent = state.FieldManager

	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if opts.DryRun {
		// Shadow mode writes nothing: no certificate Secret, and no
		// conversion webhook, whose readiness would require the CRDs to
		// point at this process rather than at the autoscaler serving them.
		opts.DisableWebhook = true
	}
	var conversionWebhook *webhook.Webhook
	var webhookServer crwebhook.Server
	if !opts.DisableWebhook {
		if conversionWebhook, err = webhook.New(webhookOptions(opts)); err != nil {
			return nil, fmt.Errorf("configuring the conversion webhook: %w", err)
		}
		webhookServer = crwebhook.NewServer(conversionWebhook.ServerOptions())
	}
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		WebhookServer: webhookServer,
		Scheme:        scheme,
		Logger:        logger,
		// Runnables (the provisioner, the disruption loop) log through the
		// context they are started with: give them this operator's logger,
		// not the process-wide one, so that two operators in one process
		// (tests, a restart) never write through each other's sinks.
		BaseContext:                   func() context.Context { return logr.NewContext(context.Background(), logger) },
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        address(opts.HealthProbePort),
		LeaderElection:                opts.LeaderElect,
		LeaderElectionID:              opts.LeaderElectionName,
		LeaderElectionNamespace:       opts.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Cache:                         cache.Options{DefaultTransform: state.StripManagedFields},
		Controller:                    ControllerConfig(opts.AllowRestart),
	})
	if err != nil {
		return nil, fmt.Errorf("creating controller manager: %w", err)
	}
	if err := indexes.Setup(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding liveness probe: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return nil, fmt.Errorf("adding readiness probe: %w", err)
	}
	if conversionWebhook != nil {
		ready, err := conversionWebhook.Setup(ctx, mgr)
		if err != nil {
			return nil, fmt.Errorf("setting up the conversion webhook: %w", err)
		}
		if err := mgr.AddReadyzCheck("conversion-webhook", ready); err != nil {
			return nil, fmt.Errorf("adding the conversion webhook's readiness probe: %w", err)
		}
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewBuildInfoCollector())
	m, err := metrics.New(registry)
	if err != nil {
		return nil, err
	}
	if opts.MetricsPort != 0 {
		if err := mgr.Add(&metricsServer{address: address(opts.MetricsPort), gatherers: prometheus.Gatherers{crmetrics.Registry, registry}, profiling: opts.EnableProfiling}); err != nil {
			return nil, fmt.Errorf("adding metrics server: %w", err)
		}
	}
	clk := clock.RealClock{}
	return &Operator{
		Options: opts, Logger: logger, Clock: clk, Scheme: scheme, RESTConfig: restConfig, Manager: mgr,
		KubeClient: mgr.GetClient(), Recorder: events.NewRecorder(mgr.GetEventRecorderFor("dovetail"), clk), //nolint:staticcheck // core/v1 Events, where Karpenter records them and where users' alerts look
		Metrics: m, Registry: registry, Webhook: conversionWebhook,
	}, nil
}

// webhookOptions maps the operator's options to the webhook's.
func webhookOptions(opts Options) webhook.Options {
	var w webhook.Options
	if opts.WebhookLocalURL {
		w = webhook.LocalOptions(opts.WebhookPort, opts.WebhookCertDir)
	} else {
		w = webhook.Options{
			Port: opts.WebhookPort, CertDir: opts.WebhookCertDir,
			ServiceName: opts.WebhookServiceName, ServiceNamespace: opts.WebhookServiceNamespace,
		}
	}
	w.DefaultNodeClass = opts.WebhookDefaultNodeClass
	return w
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading --kubeconfig %s: %w", kubeconfig, err)
		}
		return config, nil
	}
	config, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no --kubeconfig given and not running in a cluster: %w", err)
	}
	return config, nil
}

func address(port int) string {
	if port == 0 {
		return "0"
	}
	return net.JoinHostPort("", strconv.Itoa(port))
}

// Start runs the manager (and every registered controller) until ctx ends.
func (o *Operator) Start(ctx context.Context) error {
	o.Logger.Info("Starting Dovetail controller", "leaderElection", o.Options.LeaderElect, "dryRun", o.Options.DryRun)
	if err := o.Manager.Start(ctx); err != nil {
		return fmt.Errorf("running controller manager: %w", err)
	}
	return nil
}

// metricsServer serves /metrics from the given gatherers.
type metricsServer struct {
	address   string
	gatherers prometheus.Gatherers
	// profiling adds Go's pprof handlers under /debug/pprof/.
	profiling bool
}

// Start serves until ctx ends.
func (s *metricsServer) Start(ctx context.Context) error {
	server := &http.Server{Addr: s.address, Handler: s.handler(), ReadHeaderTimeout: 10 * time.Second}
	listener, err := net.Listen("tcp", s.address)
	if err != nil {
		return fmt.Errorf("listening for metrics on %s: %w", s.address, err)
	}
	errCh := make(chan error, 1)
	go func() { errCh <- server.Serve(listener) }()
	select {
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return server.Shutdown(shutdownCtx)
	case err := <-errCh:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serving metrics: %w", err)
	}
}

// scrapeErrorLog logs what a scrape of /metrics could not collect.
type scrapeErrorLog struct{ logger logr.Logger }

// Println logs one error of a scrape.
func (l scrapeErrorLog) Println(v ...any) {
	l.logger.Error(errors.New(fmt.Sprint(v...)), "Serving metrics: a collector failed; its series are left out")
}

// handler serves /metrics and, with profiling, /debug/pprof/.
func (s *metricsServer) handler() http.Handler {
	mux := http.NewServeMux()
	// A collector that fails serves the other metrics, not an HTTP 500
	// that would blank every dashboard.
	mux.Handle("/metrics", promhttp.HandlerFor(s.gatherers, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError, ErrorLog: scrapeErrorLog{ctrl.Log.WithName("metrics")}}))
	if s.profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// NeedLeaderElection lets every replica serve metrics.
func (s *metricsServer) NeedLeaderElection() bool { return false }

// ControllerConfig is the configuration of every controller a Dovetail
// manager runs. allowRestart lets one process start controllers of the
// same names again (tests, the local cluster).
//
// The work queues are client-go's rate-limited queues, not
// controller-runtime's priority queue: in v0.24.1 the priority queue can
// deadlock on shutdown (kubernetes-sigs/controller-runtime#3538, fixed
// after v0.24), leaving a worker blocked and the manager's graceful stop
// timing out after 30 s. Revisit when the pinned controller-runtime
// carries the fix.
func ControllerConfig(allowRestart bool) config.Controller {
	return config.Controller{SkipNameValidation: &allowRestart, UsePriorityQueue: new(false)}
}
