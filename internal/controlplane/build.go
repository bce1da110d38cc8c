package controlplane

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Build runs hack/build-controlplane.sh of the checkout at repoRoot, building
// the pinned components into binDir. It streams the script's progress to out.
// The script skips components that are already built at the pinned version.
func Build(ctx context.Context, repoRoot, binDir string, out io.Writer) error {
	script := filepath.Join(repoRoot, "hack", "build-controlplane.sh")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("finding the control-plane build script: %w", err)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "DOVETAIL_BIN_DIR="+binDir)
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("building control-plane binaries with %s: %w", script, err)
	}
	return nil
}
