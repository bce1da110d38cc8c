package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// servingCertificate gives the webhook server the certificate in CertDir
// once there is one. controller-runtime's server reads the files when it
// starts and fails if they are missing, but on a fresh install they appear
// only after the manager started: the rotator issues them, and then the
// kubelet (or the secretKeeper) writes them. So the server is configured to
// ask GetCertificate, which fails the TLS handshake until the files exist;
// from then on controller-runtime's certwatcher serves and reloads them.
type servingCertificate struct {
	certPath, keyPath string

	mu      sync.RWMutex
	watcher *certwatcher.CertWatcher
}

// configure makes a TLS configuration serve this certificate.
func (s *servingCertificate) configure(config *tls.Config) {
	config.GetCertificate = s.GetCertificate
}

// GetCertificate returns the current certificate, or an error while there
// is none yet.
func (s *servingCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.RLock()
	watcher := s.watcher
	s.mu.RUnlock()
	if watcher == nil {
		return nil, fmt.Errorf("no serving certificate in %s yet", filepath.Dir(s.certPath))
	}
	return watcher.GetCertificate(hello)
}

// Start waits until the certificate files can be read, then watches them
// until ctx ends.
func (s *servingCertificate) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("cert", s.certPath)
	var watcher *certwatcher.CertWatcher
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(context.Context) (bool, error) {
		w, err := certwatcher.New(s.certPath, s.keyPath)
		if err != nil {
			logger.V(4).Info("Waiting for the webhook serving certificate", "reason", err.Error())
			return false, nil
		}
		watcher = w
		return true, nil
	})
	if err != nil {
		return nil //nolint:nilerr // ctx ended before there was a certificate: a normal stop
	}
	logger.Info("Loaded the webhook serving certificate")
	s.mu.Lock()
	s.watcher = watcher
	s.mu.Unlock()
	if err := watcher.Start(ctx); err != nil {
		return fmt.Errorf("watching the webhook serving certificate: %w", err)
	}
	return nil
}

// NeedLeaderElection lets every replica serve conversions.
func (s *servingCertificate) NeedLeaderElection() bool { return false }

// secretKeeper looks after the Secret in which the certificate rotator keeps
// the CA and the serving certificate:
//  1. it creates the Secret when it is missing, because the rotator only
//     fills an existing one; a deleted Secret is thus replaced by an empty one,
//     for which the rotator issues a new CA and injects it into the CRDs;
//  2. with WriteCertFiles, it writes the serving certificate and key into
//     CertDir whenever they change, where no kubelet mounts the Secret.
type secretKeeper struct {
	key        types.NamespacedName
	reader     client.Reader
	writer     client.Writer
	writeFiles bool
	certDir    string
}

// Reconcile implements reconcile.Reconciler for the one Secret.
func (k *secretKeeper) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx).WithValues("Secret", klog.KRef(k.key.Namespace, k.key.Name))
	secret := &corev1.Secret{}
	err := k.reader.Get(ctx, k.key, secret)
	if apierrors.IsNotFound(err) {
		logger.Info("Creating the webhook certificate Secret")
		return reconcile.Result{}, k.create(ctx)
	}
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the webhook certificate Secret: %w", err)
	}
	if !k.writeFiles || !secret.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	cert, key := secret.Data[CertName], secret.Data[KeyName]
	if len(cert) == 0 || len(key) == 0 {
		return reconcile.Result{}, nil // the rotator has not issued it yet
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		logger.Info("Ignoring an invalid serving certificate until the rotator replaces it", "reason", err.Error())
		return reconcile.Result{}, nil
	}
	written, err := writeCertFiles(k.certDir, cert, key)
	if err != nil {
		return reconcile.Result{}, err
	}
	if written {
		logger.Info("Wrote the webhook serving certificate", "dir", k.certDir)
	}
	return reconcile.Result{}, nil
}

// create creates the Secret, empty; another replica may have been first.
func (k *secretKeeper) create(ctx context.Context) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: k.key.Namespace, Name: k.key.Name,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "dovetail"},
		},
		Type: corev1.SecretTypeOpaque,
	}
	if err := k.writer.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the webhook certificate Secret %s: %w", k.key, err)
	}
	return nil
}

// writeCertFiles writes the key, then the certificate, into dir, each by a
// rename so that a reader never sees half a file, and only when they
// differ from what is there. It reports whether it wrote anything.
func writeCertFiles(dir string, cert, key []byte) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("creating the certificate directory: %w", err)
	}
	written := false
	for _, f := range []struct {
		name string
		data []byte
	}{{KeyName, key}, {CertName, cert}} {
		path := filepath.Join(dir, f.name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if err := writeFileAtomically(path, f.data); err != nil {
			return written, err
		}
		written = true
	}
	return written, nil
}

// writeFileAtomically writes data to a temporary file beside path and
// renames it to path.
func writeFileAtomically(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, writeErr := tmp.Write(data)
	closeErr := tmp.Close()
	if err := errors.Join(writeErr, closeErr); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", path, err), os.Remove(tmp.Name()))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return errors.Join(fmt.Errorf("writing %s: %w", path, err), os.Remove(tmp.Name()))
	}
	return nil
}

// addSecretKeeper registers the secretKeeper with mgr: a cache that holds
// only the one Secret, and a controller that runs on every replica.
func addSecretKeeper(mgr manager.Manager, k *secretKeeper, name string) error {
	secretCache, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Secret{}: {
			Namespaces: map[string]cache.Config{k.key.Namespace: {}},
			Field:      fields.OneTermEqualSelector("metadata.name", k.key.Name),
		}},
	})
	if err != nil {
		return fmt.Errorf("creating the webhook Secret cache: %w", err)
	}
	if err := mgr.Add(everyReplica{secretCache}); err != nil {
		return fmt.Errorf("adding the webhook Secret cache: %w", err)
	}
	k.reader = secretCache
	c, err := controller.NewUnmanaged(name, controller.Options{
		Reconciler: k,
		// The name is unique per Secret; tests start several in one process.
		SkipNameValidation: ptr.To(true),
		Logger:             mgr.GetLogger().WithName(name),
	})
	if err != nil {
		return fmt.Errorf("creating the webhook Secret controller: %w", err)
	}
	if err := c.Watch(source.Kind(secretCache, &corev1.Secret{}, &handler.TypedEnqueueRequestForObject[*corev1.Secret]{})); err != nil {
		return fmt.Errorf("watching the webhook Secret: %w", err)
	}
	if err := mgr.Add(everyReplica{c}); err != nil {
		return fmt.Errorf("adding the webhook Secret controller: %w", err)
	}
	return nil
}

// everyReplica runs a runnable on every replica, leader or not: each
// replica serves conversions, so each needs the certificate.
type everyReplica struct{ manager.Runnable }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (everyReplica) NeedLeaderElection() bool { return false }
