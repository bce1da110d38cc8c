package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuildIsReproducible: the same binary gives the same image digest, and
// the image runs as the non-root user with the CA bundle in place.
func TestBuildIsReproducible(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "dovetail")
	if err := os.WriteFile(binary, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var digests []string
	for range 2 {
		img, err := build(binary, "amd64", "test")
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d.String())
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Config.User != "65532:65532" || cfg.OS != "linux" || len(cfg.Config.Entrypoint) == 0 {
			t.Errorf("config: user %q, os %q, entrypoint %v", cfg.Config.User, cfg.OS, cfg.Config.Entrypoint)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary: %s and %s", digests[0], digests[1])
	}
	certs, err := caBundle()
	if err != nil || len(certs) < 10000 {
		t.Errorf("CA bundle of %d bytes: %v", len(certs), err)
	}
}
