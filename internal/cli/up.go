package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/spf13/cobra"

	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
)

// UpOptions configure `dovetail up`.
type UpOptions struct {
	// BinDir holds the control-plane binaries; empty means the checkout's bin/.
	BinDir string
	// WorkDir keeps data, certificates and logs; empty means a temporary directory.
	WorkDir string
	// KeepWorkDir keeps WorkDir after shutdown.
	KeepWorkDir bool
	// APIServerPort is the kube-apiserver port; zero picks a free one.
	APIServerPort int
	// KubeconfigOut, when set, also writes the admin kubeconfig there.
	KubeconfigOut string
	// NoController starts only the control plane and the CRDs.
	NoController bool
	// NoDefaults skips the default NodeClass (EC2NodeClass with --cloud aws,
	// KWOKNodeClass with --cloud kwok) and NodePool.
	NoDefaults bool
	// MetricsPort serves the controller's metrics; zero disables them.
	MetricsPort int
	// LogLevel of the controller.
	LogLevel string
	// Cloud is the cloud provider: aws (the local AWS endpoint) or kwok.
	Cloud string
	// AWSPort is the local AWS endpoint's port; zero picks a free one.
	AWSPort int
	// Kwok configures the simulated cloud.
	Kwok compose.KwokOptions

	Streams genericiooptions.IOStreams
}

// NewUpCommand builds `dovetail up`.
func NewUpCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &UpOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local cluster with Dovetail until interrupted",
		Long: `Starts etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok
on loopback ports and installs Dovetail's CRDs.

With --cloud aws (the default) it also starts a local AWS endpoint (EC2, IAM,
SSM, Pricing, SQS and EKS DescribeCluster over AWS's wire protocols, with a
seeded account: a VPC with a subnet per zone, security groups, the node role,
EKS-optimized AMIs), creates the default EC2NodeClass (al2023@latest, subnets
and security groups by the karpenter.sh/discovery tag, role
KarpenterNodeRole-dovetail) and NodePool, and runs the Dovetail controller with
the AWS provider against it: launched instances boot as kwok Nodes. With
--cloud kwok it creates a KWOKNodeClass and NodePool and runs the kwok provider.

It prints the KUBECONFIG to use (and, for aws, the endpoint URL for the AWS
CLI), stays up until interrupted (Ctrl-C), then stops everything it started. On
a fresh checkout the first run builds the pinned control-plane binaries into
bin/.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.BinDir, "bin-dir", "", "directory holding the control-plane binaries (default: bin/ of the Dovetail checkout, built on first use)")
	cmd.Flags().StringVar(&o.WorkDir, "work-dir", "", "directory for data, certificates and logs (default: a new temporary directory)")
	cmd.Flags().BoolVar(&o.KeepWorkDir, "keep-work-dir", false, "keep the work directory (logs, etcd data) after shutdown")
	cmd.Flags().IntVar(&o.APIServerPort, "apiserver-port", 0, "kube-apiserver port on 127.0.0.1 (default: a free port)")
	cmd.Flags().StringVar(&o.KubeconfigOut, "kubeconfig-out", "", "also write the admin kubeconfig to this path")
	cmd.Flags().BoolVar(&o.NoController, "no-controller", false, "start only the control plane and the CRDs")
	cmd.Flags().BoolVar(&o.NoDefaults, "no-default-nodepool", false, "do not create the default NodeClass (EC2NodeClass with --cloud aws, KWOKNodeClass with --cloud kwok) and NodePool")
	cmd.Flags().IntVar(&o.MetricsPort, "metrics-port", 0, "serve the controller's Prometheus metrics on this port (0: off)")
	cmd.Flags().StringVar(&o.LogLevel, "log-level", "info", "controller log level: debug, info or error")
	cmd.Flags().StringVar(&o.Cloud, "cloud", CloudAWS, "cloud provider: aws (a local AWS endpoint whose instances become kwok Nodes; default EC2NodeClass and NodePool) or kwok (KWOKNodeClass)")
	cmd.Flags().IntVar(&o.AWSPort, "aws-port", 0, "port of the local AWS endpoint on 127.0.0.1 with --cloud aws (default: a free port)")
	o.Kwok.AddFlags(cmd.Flags())
	return cmd
}

// The clouds dovetail up and dovetail demo run on.
const (
	CloudAWS  = "aws"
	CloudKwok = "kwok"
)

// validateCloud names the flag when the cloud is not one of the supported.
func validateCloud(cloud string) error {
	if cloud != CloudAWS && cloud != CloudKwok {
		return fmt.Errorf("--cloud %q is not supported (supported: %s, %s)", cloud, CloudAWS, CloudKwok)
	}
	return nil
}

// Validate checks the flags, naming the offending one.
func (o *UpOptions) Validate() error {
	if o.APIServerPort < 0 || o.APIServerPort > 65535 {
		return fmt.Errorf("--apiserver-port %d is out of range 1-65535", o.APIServerPort)
	}
	if o.MetricsPort < 0 || o.MetricsPort > 65535 {
		return fmt.Errorf("--metrics-port %d is out of range 0-65535", o.MetricsPort)
	}
	if err := validateCloud(o.Cloud); err != nil {
		return err
	}
	if o.AWSPort < 0 || o.AWSPort > 65535 {
		return fmt.Errorf("--aws-port %d is out of range 0-65535", o.AWSPort)
	}
	if err := o.Kwok.Validate(); err != nil {
		return err
	}
	return validateBinDir(o.BinDir)
}

// Run starts the local cluster and the controller and waits for ctx to end.
func (o *UpOptions) Run(ctx context.Context) error {
	binDir, err := ensureBinaries(ctx, o.BinDir, o.Streams.ErrOut)
	if err != nil {
		return err
	}
	cpOpts := controlplane.Options{
		BinDir:        binDir,
		WorkDir:       o.WorkDir,
		KeepWorkDir:   o.KeepWorkDir,
		APIServerPort: o.APIServerPort,
	}
	var cluster *localcluster.Cluster
	if o.Cloud == CloudAWS {
		fmt.Fprintln(o.Streams.ErrOut, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok and the local AWS endpoint ...")
		cluster, err = localcluster.StartAWS(ctx, cpOpts, localcluster.AWSOptions{Port: o.AWSPort}, !o.NoDefaults)
	} else {
		fmt.Fprintln(o.Streams.ErrOut, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok ...")
		cluster, err = localcluster.Start(ctx, cpOpts, !o.NoDefaults)
	}
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(o.Streams.ErrOut, "Stopping the local control plane ...")
		if err := cluster.Stop(); err != nil {
			fmt.Fprintf(o.Streams.ErrOut, "error stopping the local control plane: %v\n", err)
		}
	}()
	cp := cluster.ControlPlane
	kubeconfig := cp.KubeconfigPath
	if o.KubeconfigOut != "" {
		data, err := os.ReadFile(cp.KubeconfigPath)
		if err != nil {
			return fmt.Errorf("reading kubeconfig: %w", err)
		}
		if err := os.WriteFile(o.KubeconfigOut, data, 0o600); err != nil {
			return fmt.Errorf("writing --kubeconfig-out %s: %w", o.KubeconfigOut, err)
		}
		kubeconfig = o.KubeconfigOut
	}
	var controller *localcluster.Controller
	if !o.NoController {
		opts := localcluster.OperatorOptions()
		if o.Cloud == CloudAWS {
			opts = localcluster.AWSOperatorOptions()
		}
		opts.MetricsPort = o.MetricsPort
		opts.LogLevel = o.LogLevel
		opts.LogWriter = o.Streams.ErrOut
		if o.Cloud == CloudAWS {
			controller, err = cluster.StartAWSController(ctx, opts, cluster.AWSSettings())
		} else {
			controller, err = cluster.StartController(ctx, opts, o.Kwok)
		}
		if err != nil {
			return fmt.Errorf("starting the Dovetail controller: %w", err)
		}
		defer func() {
			if err := controller.Stop(); err != nil {
				fmt.Fprintf(o.Streams.ErrOut, "error stopping the Dovetail controller: %v\n", err)
			}
		}()
	}
	info := upInfo{Kubeconfig: kubeconfig, BinDir: binDir, LogDir: cp.LogDir}
	if cluster.AWS != nil {
		info.AWS = &upAWSInfo{URL: cluster.AWS.URL(), Region: cluster.AWS.Region(), ClusterName: cluster.AWS.ClusterName()}
	}
	if err := printUp(o.Streams.Out, info); err != nil {
		return err
	}
	return waitUntilDone(ctx, cp, controller)
}

// upInfo is what `dovetail up` tells its user once the cluster is up.
type upInfo struct {
	// Kubeconfig is the admin kubeconfig to export.
	Kubeconfig string
	// BinDir holds kubectl.
	BinDir string
	// LogDir holds the components' logs.
	LogDir string
	// AWS describes the local AWS endpoint; nil with --cloud kwok.
	AWS *upAWSInfo
}

// upAWSInfo is the local AWS endpoint as the AWS CLI reaches it.
type upAWSInfo struct {
	// URL is the endpoint's base URL, for --endpoint-url.
	URL string
	// Region and ClusterName are the account's region and EKS cluster.
	Region, ClusterName string
}

// printUp writes the KUBECONFIG and PATH lines to use the cluster, and with
// the AWS endpoint its URL and the fixed local credentials
// (localaws.AccessKeyID, localaws.SecretAccessKey) for the AWS CLI.
func printUp(w io.Writer, info upInfo) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Dovetail's local cluster is up. In another terminal:\n\n  export KUBECONFIG=%s\n  export PATH=%s:$PATH   # kubectl\n  kubectl get nodepools,nodeclaims,nodes -o wide\n", info.Kubeconfig, info.BinDir)
	if a := info.AWS; a != nil {
		fmt.Fprintf(&b, "\nThe local AWS endpoint (region %s, cluster %s) answers the AWS CLI too:\n\n  export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s AWS_REGION=%s\n  aws --endpoint-url %s ec2 describe-instances\n",
			a.Region, a.ClusterName, localaws.AccessKeyID, localaws.SecretAccessKey, a.Region, a.URL)
	}
	fmt.Fprintf(&b, "\nComponent logs are in %s. Press Ctrl-C to stop and clean up.\n", info.LogDir)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("printing how to reach the local cluster: %w", err)
	}
	return nil
}

// waitUntilDone blocks until ctx ends (nil), or a component or the
// controller stops on its own (error).
func waitUntilDone(ctx context.Context, cp *controlplane.ControlPlane, controller *localcluster.Controller) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	var controllerDone <-chan struct{}
	if controller != nil {
		controllerDone = controller.Done()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-controllerDone:
			return fmt.Errorf("the Dovetail controller stopped: %w", controller.Err())
		case <-ticker.C:
			if err := cp.Running(); err != nil {
				return fmt.Errorf("a control-plane component stopped: %w", err)
			}
		}
	}
}
