package controlplane

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Profile selects which components Start runs.
type Profile string

const (
	// ProfileAPIServer runs etcd and kube-apiserver: enough for integration
	// tests that exercise admission, CRDs and controllers against a real API.
	ProfileAPIServer Profile = "apiserver"
	// ProfileFull adds kube-scheduler, kube-controller-manager and kwok, so
	// that pods are really scheduled, Deployments create pods and kwok plays
	// the kubelet of simulated nodes.
	ProfileFull Profile = "full"
)

// Binary names, as built into the bin directory by hack/build-controlplane.sh.
const (
	BinaryEtcd                  = "etcd"
	BinaryKubeAPIServer         = "kube-apiserver"
	BinaryKubeControllerManager = "kube-controller-manager"
	BinaryKubeScheduler         = "kube-scheduler"
	BinaryKwok                  = "kwok"
	// KwokStagesFile is the kwok configuration with its node and pod stages.
	KwokStagesFile = "kwok-stages.yaml"
)

// KwokNodeAnnotation is the annotation (key=value) that marks the Nodes kwok
// manages; providers that create kwok nodes must set it.
const (
	KwokNodeAnnotationKey   = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
)

// Options configure a control plane.
type Options struct {
	// Profile selects the components; ProfileAPIServer when empty.
	Profile Profile
	// BinDir holds the component binaries; DefaultBinDir() when empty.
	BinDir string
	// WorkDir holds data, certificates, logs and the kubeconfig; a new
	// temporary directory when empty.
	WorkDir string
	// KeepWorkDir keeps WorkDir (logs, etcd data) after Stop.
	KeepWorkDir bool
	// APIServerPort is the apiserver's secure port; a free port when zero.
	APIServerPort int
	// StartTimeout bounds how long each component may take to become ready.
	StartTimeout time.Duration
	// StopGracePeriod is how long a component may take to exit after SIGTERM.
	StopGracePeriod time.Duration
}

// validate fills defaults and checks the options, naming the offending field.
func (o *Options) complete() error {
	switch o.Profile {
	case "":
		o.Profile = ProfileAPIServer
	case ProfileAPIServer, ProfileFull:
	default:
		return fmt.Errorf("profile %q is not one of %q, %q", o.Profile, ProfileAPIServer, ProfileFull)
	}
	if o.BinDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return err
		}
		o.BinDir = dir
	}
	if o.APIServerPort < 0 || o.APIServerPort > 65535 {
		return fmt.Errorf("apiserver port %d is out of range 1-65535", o.APIServerPort)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 90 * time.Second
	}
	if o.StopGracePeriod == 0 {
		o.StopGracePeriod = 10 * time.Second
	}
	return CheckBinaries(o.BinDir, o.Profile)
}

// RequiredBinaries lists the files a profile needs in the bin directory.
func RequiredBinaries(profile Profile) []string {
	files := []string{BinaryEtcd, BinaryKubeAPIServer}
	if profile == ProfileFull {
		files = append(files, BinaryKubeControllerManager, BinaryKubeScheduler, BinaryKwok, KwokStagesFile)
	}
	return files
}

// ErrBinariesMissing is returned (wrapped) when the bin directory lacks a component.
var ErrBinariesMissing = errors.New("control-plane binaries missing")

// CheckBinaries reports which of the profile's binaries are missing from dir.
func CheckBinaries(dir string, profile Profile) error {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return fmt.Errorf("%w: bin directory %s does not exist (build it with `make controlplane` or hack/build-controlplane.sh)", ErrBinariesMissing, dir)
	}
	var missing []string
	for _, name := range RequiredBinaries(profile) {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w in %s: %s (build them with `make controlplane` or hack/build-controlplane.sh)", ErrBinariesMissing, dir, strings.Join(missing, ", "))
	}
	return nil
}

// DefaultBinDir is $DOVETAIL_BIN_DIR, else the bin directory of the Dovetail
// checkout that contains the working directory.
func DefaultBinDir() (string, error) {
	if dir := os.Getenv("DOVETAIL_BIN_DIR"); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", fmt.Errorf("finding the bin directory (set DOVETAIL_BIN_DIR or pass a bin directory): %w", err)
	}
	return filepath.Join(root, "bin"), nil
}

// RepoRoot walks up from the working directory to the Dovetail checkout
// (the directory holding hack/build-controlplane.sh).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("reading working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "build-controlplane.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside a Dovetail checkout (no hack/build-controlplane.sh above the working directory)")
		}
		dir = parent
	}
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	// Below the kernel's ephemeral range (32768 and up by default): a port
	// taken from that range can be handed to some client's outgoing
	// connection before the component binds it (seen in CI as "bind:
	// address already in use" when test packages run in parallel).
	for range 64 {
		port := localPortLow + rand.IntN(localPortHigh-localPortLow)
		if checkPortFree(port) == nil {
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// The range freePort draws listening ports from.
const (
	localPortLow  = 20000
	localPortHigh = 32000
)

// checkPortFree fails when something already listens on the loopback port.
func checkPortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d is in use: %w", port, err)
	}
	return l.Close()
}
