// Command image builds Dovetail's container image without a container
// engine: one layer holding the static dovetail binary, a CA bundle and the
// passwd/group entries of the non-root user, on an empty base. Every input
// is fixed (file times, owners, the image's creation time, the CA bundle
// from golang.org/x/crypto/x509roots/fallback), so the same binary gives the
// same digest. It writes an OCI image layout and a tarball that `docker
// load`, `crane push` or `skopeo copy` accept, and prints the digest.
//
// Usage (see `make image`; paths absolute or relative to this directory):
//
//	cd hack/tools/image && go run . \
//	    -binary ../../../bin/image/dovetail -ref ghcr.io/dovetail-autoscaler/dovetail:0.1.0 \
//	    -layout ../../../bin/image/oci -tarball ../../../bin/image/dovetail.tar
package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The non-root user and group the controller runs as (the chart's
// runAsUser/runAsGroup).
const uid, gid = 65532, 65532

func main() {
	binary := flag.String("binary", "", "path of the static dovetail binary (linux)")
	ref := flag.String("ref", "", "image reference the tarball and layout name, e.g. ghcr.io/dovetail-autoscaler/dovetail:0.1.0")
	layoutDir := flag.String("layout", "", "directory to write the OCI image layout into (replaced)")
	tarPath := flag.String("tarball", "", "path of the image tarball to write")
	arch := flag.String("arch", runtime.GOARCH, "architecture of the binary")
	flag.Parse()
	if err := run(*binary, *ref, *layoutDir, *tarPath, *arch); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(binary, ref, layoutDir, tarPath, arch string) error {
	if binary == "" || ref == "" || layoutDir == "" || tarPath == "" {
		return fmt.Errorf("-binary, -ref, -layout and -tarball are required")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("parsing -ref: %w", err)
	}
	img, err := build(binary, arch, tag.TagStr())
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("computing the digest: %w", err)
	}
	if err := os.RemoveAll(layoutDir); err != nil {
		return fmt.Errorf("removing the old layout: %w", err)
	}
	path, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	if err := path.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": tag.String()})); err != nil {
		return fmt.Errorf("writing the image into the OCI layout: %w", err)
	}
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		return fmt.Errorf("writing the tarball: %w", err)
	}
	size, err := compressedSize(img)
	if err != nil {
		return err
	}
	fmt.Printf("image %s\ndigest %s\ncompressed size %d bytes (config, manifest and layers)\n", tag, digest, size)
	return nil
}

// build assembles the image.
func build(binary, arch, version string) (v1.Image, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	files := []file{
		{name: "etc/", dir: true},
		{name: "etc/ssl/", dir: true},
		{name: "etc/ssl/certs/", dir: true},
		{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o444, data: certs},
		{name: "etc/passwd", mode: 0o444, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)},
		{name: "etc/group", mode: 0o444, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", gid)},
		{name: "home/", dir: true},
		{name: "home/nonroot/", dir: true, owner: uid},
		{name: "tmp/", dir: true, mode: 0o1777},
		{name: "usr/", dir: true},
		{name: "usr/local/", dir: true},
		{name: "usr/local/bin/", dir: true},
		{name: "usr/local/bin/dovetail", mode: 0o555, data: data},
	}
	layerBytes, err := tarLayer(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("creating the layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, fmt.Errorf("adding the layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the image config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, gid)
	cfg.Config.WorkingDir = "/home/nonroot"
	cfg.Config.Entrypoint = []string{"/usr/local/bin/dovetail"}
	cfg.Config.Env = []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.source":  "https://github.com/dovetail-autoscaler/dovetail",
		"org.opencontainers.image.title":   "dovetail",
		"org.opencontainers.image.version": version,
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting the image config: %w", err)
	}
	return img, nil
}

// file is an entry of the layer.
type file struct {
	name  string
	dir   bool
	mode  int64
	owner int
	data  []byte
}

// tarLayer writes the entries with fixed times and owners.
func tarLayer(files []file) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0).UTC()
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.owner, Gid: f.owner, ModTime: epoch, Format: tar.FormatPAX}
		if f.dir {
			h.Typeflag = tar.TypeDir
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(f.data))
		}
		if err := w.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing %s into the layer: %w", f.name, err)
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, fmt.Errorf("writing %s into the layer: %w", f.name, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("closing the layer: %w", err)
	}
	return buf.Bytes(), nil
}

// caBundle returns the PEM bundle of the Mozilla roots that carry no extra
// constraint (a PEM file cannot express one).
func caBundle() ([]byte, error) {
	var out bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, fmt.Errorf("parsing a CA root: %w", err)
		}
		if err := pem.Encode(&out, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, fmt.Errorf("encoding a CA root: %w", err)
		}
	}
	if out.Len() == 0 {
		return nil, fmt.Errorf("the CA bundle is empty")
	}
	return out.Bytes(), nil
}

// compressedSize is what a registry stores: manifest, config and layers.
func compressedSize(img v1.Image) (int64, error) {
	manifest, err := img.RawManifest()
	if err != nil {
		return 0, fmt.Errorf("reading the manifest: %w", err)
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return 0, fmt.Errorf("reading the config: %w", err)
	}
	total := int64(len(manifest) + len(config))
	layers, err := img.Layers()
	if err != nil {
		return 0, fmt.Errorf("reading the layers: %w", err)
	}
	for _, l := range layers {
		s, err := l.Size()
		if err != nil {
			return 0, fmt.Errorf("reading a layer's size: %w", err)
		}
		total += s
	}
	return total, nil
}
