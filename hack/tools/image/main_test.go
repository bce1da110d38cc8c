package main

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRunRefusesBadFlags: a missing flag, a reference that is not a tag
// and an unreadable binary fail before anything is written.
func TestRunRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "dovetail")
	if err := os.WriteFile(binary, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	layoutDir, tarPath := filepath.Join(dir, "oci"), filepath.Join(dir, "image.tar")
	cases := map[string]struct {
		binary, ref, layout, tarball string
		wantErr                      string
	}{
		"no binary":         {ref: "example.com/dovetail:1", layout: layoutDir, tarball: tarPath, wantErr: "are required"},
		"no ref":            {binary: binary, layout: layoutDir, tarball: tarPath, wantErr: "are required"},
		"no layout":         {binary: binary, ref: "example.com/dovetail:1", tarball: tarPath, wantErr: "are required"},
		"no tarball":        {binary: binary, ref: "example.com/dovetail:1", layout: layoutDir, wantErr: "are required"},
		"ref is not a tag":  {binary: binary, ref: "Example.com/Dovetail:!", layout: layoutDir, tarball: tarPath, wantErr: "parsing -ref"},
		"binary is missing": {binary: filepath.Join(dir, "absent"), ref: "example.com/dovetail:1", layout: layoutDir, tarball: tarPath, wantErr: "reading the binary"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := run(tc.binary, tc.ref, tc.layout, tc.tarball, "amd64")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			for _, path := range []string{layoutDir, tarPath} {
				if _, err := os.Stat(path); !os.IsNotExist(err) {
					t.Errorf("%s was written (%v)", path, err)
				}
			}
		})
	}
}
