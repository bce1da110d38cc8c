package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the certificates and keys of one control plane.
type pki struct {
	caCert, caKey           string
	servingCert, servingKey string
	adminCert, adminKey     string
	saPublic, saPrivate     string
	caPEM                   []byte
	adminCertPEM            []byte
	adminKeyPEM             []byte
}

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// generatePKI writes a CA, a serving certificate for the apiserver, an admin
// client certificate (group system:masters) and a service-account key pair.
// Certificates are valid from now-1h (clock skew) for validity.
func generatePKI(dir string, now time.Time, validity time.Duration) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating pki directory: %w", err)
	}
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saPublic: filepath.Join(dir, "sa.pub"), saPrivate: filepath.Join(dir, "sa.key"),
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(validity)

	ca, err := newCertificate(&x509.Certificate{
		Subject:               pkix.Name{CommonName: "dovetail-local-ca"},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		NotBefore:             notBefore, NotAfter: notAfter,
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("creating CA: %w", err)
	}
	serving, err := newCertificate(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(KubernetesServiceIP)},
		NotBefore:   notBefore, NotAfter: notAfter,
	}, &ca)
	if err != nil {
		return nil, fmt.Errorf("creating apiserver serving certificate: %w", err)
	}
	admin, err := newCertificate(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "dovetail-admin", Organization: []string{"system:masters"}},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   notBefore, NotAfter: notAfter,
	}, &ca)
	if err != nil {
		return nil, fmt.Errorf("creating admin client certificate: %w", err)
	}
	for _, kp := range []struct {
		pair      keyPair
		cert, key string
	}{{ca, p.caCert, p.caKey}, {serving, p.servingCert, p.servingKey}, {admin, p.adminCert, p.adminKey}} {
		if err := writeKeyPair(kp.pair, kp.cert, kp.key); err != nil {
			return nil, err
		}
	}
	if err := writeServiceAccountKeys(p.saPrivate, p.saPublic); err != nil {
		return nil, err
	}
	p.caPEM = encodeCert(ca.cert)
	p.adminCertPEM = encodeCert(admin.cert)
	if p.adminKeyPEM, err = encodeKey(admin.key); err != nil {
		return nil, err
	}
	return p, nil
}

// newCertificate signs template with issuer, or self-signs it when issuer is nil.
func newCertificate(template *x509.Certificate, issuer *keyPair) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, fmt.Errorf("generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return keyPair{}, fmt.Errorf("generating serial number: %w", err)
	}
	template.SerialNumber = serial
	parent, signer := template, crypto.Signer(key)
	if issuer != nil {
		parent, signer = issuer.cert, issuer.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), signer)
	if err != nil {
		return keyPair{}, fmt.Errorf("signing certificate %q: %w", template.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return keyPair{}, fmt.Errorf("parsing certificate %q: %w", template.Subject.CommonName, err)
	}
	return keyPair{cert: cert, key: key}, nil
}

func encodeCert(cert *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func writeKeyPair(kp keyPair, certPath, keyPath string) error {
	keyPEM, err := encodeKey(kp.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, encodeCert(kp.cert), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", certPath, err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", keyPath, err)
	}
	return nil
}

// writeServiceAccountKeys writes the RSA key pair that signs and verifies
// service-account tokens.
func writeServiceAccountKeys(privatePath, publicPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating service-account key: %w", err)
	}
	private := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	publicDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding service-account public key: %w", err)
	}
	public := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: publicDER})
	if err := os.WriteFile(privatePath, private, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", privatePath, err)
	}
	if err := os.WriteFile(publicPath, public, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", publicPath, err)
	}
	return nil
}
