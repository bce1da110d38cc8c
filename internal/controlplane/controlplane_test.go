package controlplane

import (
	"crypto/x509"
	"encoding/pem"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestGeneratePKI(t *testing.T) {
	now := time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)
	p, err := generatePKI(t.TempDir(), now, 24*time.Hour)
	if err != nil {
		t.Fatalf("generatePKI: %v", err)
	}
	ca := readCert(t, p.caCert)
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	serving := readCert(t, p.servingCert)
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving certificate does not verify for 127.0.0.1: %v", err)
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc", CurrentTime: now}); err != nil {
		t.Errorf("serving certificate does not verify for kubernetes.default.svc: %v", err)
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: KubernetesServiceIP, CurrentTime: now}); err != nil {
		t.Errorf("serving certificate does not verify for the kubernetes Service IP %s: %v", KubernetesServiceIP, err)
	}
	admin := readCert(t, p.adminCert)
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin certificate does not verify as a client: %v", err)
	}
	if !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin certificate groups = %v, want [system:masters]", admin.Subject.Organization)
	}
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", CurrentTime: now.Add(48 * time.Hour)}); err == nil {
		t.Error("serving certificate still verifies after its validity")
	}
	for _, f := range []string{p.caKey, p.servingKey, p.adminKey, p.saPrivate, p.saPublic} {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatalf("missing %s: %v", f, err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, info.Mode().Perm())
		}
	}
}

// TestServiceRange checks the kubernetes Service IP is the first address of
// the service range, and that the range stays clear of the local AWS
// endpoint's seeded VPC (localaws.VPCCIDR, which imports this package), as
// EKS requires.
func TestServiceRange(t *testing.T) {
	prefix, err := netip.ParsePrefix(ServiceClusterIPRange)
	if err != nil {
		t.Fatalf("ServiceClusterIPRange %q: %v", ServiceClusterIPRange, err)
	}
	if first := prefix.Masked().Addr().Next(); first.String() != KubernetesServiceIP {
		t.Errorf("KubernetesServiceIP = %s, want %s, the first address of %s", KubernetesServiceIP, first, prefix)
	}
	if vpc := netip.MustParsePrefix("10.0.0.0/16"); prefix.Overlaps(vpc) {
		t.Errorf("service range %s overlaps the seeded VPC %s", prefix, vpc)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM block", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func TestCheckBinaries(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{BinaryEtcd, BinaryKubeAPIServer} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckBinaries(dir, ProfileAPIServer); err != nil {
		t.Errorf("apiserver profile with etcd and kube-apiserver: %v", err)
	}
	if err := CheckBinaries(dir, ProfileFull); err == nil {
		t.Error("full profile without scheduler, controller manager and kwok passed")
	}
}

func TestOptionsComplete(t *testing.T) {
	dir := t.TempDir()
	for _, name := range RequiredBinaries(ProfileFull) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{BinDir: dir}
	if err := o.complete(); err != nil {
		t.Fatalf("complete: %v", err)
	}
	if o.Profile != ProfileAPIServer || o.StartTimeout == 0 || o.StopGracePeriod == 0 {
		t.Errorf("defaults not filled: %+v", o)
	}
}
