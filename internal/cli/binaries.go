package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
)

// validateBinDir checks an explicit --bin-dir.
func validateBinDir(dir string) error {
	if dir == "" {
		return nil
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return fmt.Errorf("--bin-dir %s is not a directory", dir)
	}
	return nil
}

// ensureBinaries returns the control-plane bin directory. An explicit
// directory must already hold the binaries; the checkout's bin/ is built on
// first use, with progress written to out.
func ensureBinaries(ctx context.Context, explicit string, out io.Writer) (string, error) {
	if explicit != "" {
		return explicit, controlplane.CheckBinaries(explicit, controlplane.ProfileFull)
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
	fmt.Fprintf(out, "Building the control-plane binaries into %s (first run only; this takes 10-15 minutes on 2 cores) ...\n", binDir)
	if err := controlplane.Build(ctx, root, binDir, out); err != nil {
		return "", err
	}
	return binDir, controlplane.CheckBinaries(binDir, controlplane.ProfileFull)
}
