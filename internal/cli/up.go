package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
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

	Streams IOStreams
}

// NewUpCommand builds `dovetail up`.
func NewUpCommand(streams IOStreams) *cobra.Command {
	o := &UpOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local control plane with Dovetail until interrupted",
		Long: `Starts etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok
on loopback ports, installs Dovetail's CRDs and prints the KUBECONFIG to use.
It stays up until interrupted (Ctrl-C), then stops everything it started.
On a fresh checkout the first run builds the pinned control-plane binaries into bin/.`,
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
	return cmd
}

// Validate checks the flags, naming the offending one.
func (o *UpOptions) Validate() error {
	if o.APIServerPort < 0 || o.APIServerPort > 65535 {
		return fmt.Errorf("--apiserver-port %d is out of range 1-65535", o.APIServerPort)
	}
	if o.BinDir != "" {
		info, err := os.Stat(o.BinDir)
		if err != nil || !info.IsDir() {
			return fmt.Errorf("--bin-dir %s is not a directory", o.BinDir)
		}
	}
	return nil
}

// Run starts the control plane, installs the CRDs and waits for ctx to end.
func (o *UpOptions) Run(ctx context.Context) error {
	binDir, err := o.ensureBinaries(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(o.Streams.ErrOut, "Starting etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok ...")
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Profile:       controlplane.ProfileFull,
		BinDir:        binDir,
		WorkDir:       o.WorkDir,
		KeepWorkDir:   o.KeepWorkDir,
		APIServerPort: o.APIServerPort,
	})
	if err != nil {
		return fmt.Errorf("starting the local control plane: %w", err)
	}
	defer func() {
		fmt.Fprintln(o.Streams.ErrOut, "Stopping the local control plane ...")
		if err := cp.Stop(); err != nil {
			fmt.Fprintf(o.Streams.ErrOut, "error stopping the local control plane: %v\n", err)
		}
	}()

	all, err := crds.All()
	if err != nil {
		return err
	}
	if err := crdinstall.Install(ctx, cp.RESTConfig, all, time.Minute); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
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
	fmt.Fprintf(o.Streams.Out, "Dovetail's local control plane is up. In another terminal:\n\n  export KUBECONFIG=%s\n  kubectl get nodepools,nodeclaims,nodes -o wide\n\nComponent logs are in %s. Press Ctrl-C to stop and clean up.\n", kubeconfig, cp.LogDir)
	return waitUntilDone(ctx, cp)
}

// ensureBinaries returns the bin directory, building the binaries into the
// checkout's bin/ when they are missing and no --bin-dir was given.
func (o *UpOptions) ensureBinaries(ctx context.Context) (string, error) {
	if o.BinDir != "" {
		return o.BinDir, controlplane.CheckBinaries(o.BinDir, controlplane.ProfileFull)
	}
	binDir, err := controlplane.DefaultBinDir()
	if err != nil {
		return "", err
	}
	err = controlplane.CheckBinaries(binDir, controlplane.ProfileFull)
	if !errors.Is(err, controlplane.ErrBinariesMissing) {
		return binDir, err
	}
	root, rootErr := controlplane.RepoRoot()
	if rootErr != nil {
		return "", errors.Join(err, rootErr)
	}
	fmt.Fprintf(o.Streams.ErrOut, "Building the control-plane binaries into %s (first run only; this takes 10-15 minutes on 2 cores) ...\n", binDir)
	if err := controlplane.Build(ctx, root, binDir, o.Streams.ErrOut); err != nil {
		return "", err
	}
	return binDir, controlplane.CheckBinaries(binDir, controlplane.ProfileFull)
}

// waitUntilDone blocks until ctx ends (nil) or a component exits (error).
func waitUntilDone(ctx context.Context, cp *controlplane.ControlPlane) error {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			if err := cp.Running(); err != nil {
				return fmt.Errorf("a control-plane component stopped: %w", err)
			}
		}
	}
}
