package webhook

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	crwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
)

func TestOptions(t *testing.T) {
	t.Parallel()
	type derived struct {
		ServerName    string
		ExtraDNSNames []string
		ClientConfig  apiextensionsv1.WebhookClientConfig
		LocalAddress  string
		Secret        string
	}
	cases := map[string]struct {
		opts Options
		want derived
	}{
		"in a cluster": {
			opts: Options{ServiceNamespace: "karpenter", ServiceName: "dovetail", DNSNames: []string{"webhook.example.com"}},
			want: derived{
				ServerName:    "dovetail.karpenter.svc",
				ExtraDNSNames: []string{"dovetail.karpenter.svc.cluster.local", "webhook.example.com"},
				ClientConfig: apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
					Namespace: "karpenter", Name: "dovetail", Path: ptr.To("/convert"), Port: ptr.To[int32](443),
				}},
				LocalAddress: "localhost:9443",
				Secret:       "karpenter/dovetail-webhook-cert",
			},
		},
		"in a cluster, own ports and Secret": {
			opts: Options{ServiceNamespace: "karpenter", ServiceName: "dovetail", ServicePort: 8443, Host: "0.0.0.0", Port: 9444, SecretNamespace: "certs", SecretName: "mine"},
			want: derived{
				ServerName:    "dovetail.karpenter.svc",
				ExtraDNSNames: []string{"dovetail.karpenter.svc.cluster.local"},
				ClientConfig: apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
					Namespace: "karpenter", Name: "dovetail", Path: ptr.To("/convert"), Port: ptr.To[int32](8443),
				}},
				LocalAddress: "localhost:9444",
				Secret:       "certs/mine",
			},
		},
		"local control plane": {
			opts: LocalOptions(9555, "/certs"),
			want: derived{
				ServerName:   "localhost",
				ClientConfig: apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://localhost:9555/convert")},
				LocalAddress: "127.0.0.1:9555",
				Secret:       "kube-system/dovetail-webhook-cert",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			o, err := tc.opts.complete()
			if err != nil {
				t.Fatal(err)
			}
			got := derived{
				ServerName: o.serverName(), ExtraDNSNames: o.extraDNSNames(), ClientConfig: o.ClientConfig(),
				LocalAddress: o.localAddress(), Secret: o.SecretNamespace + "/" + o.SecretName,
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(DefaultCRDNames(), o.CRDNames); diff != "" {
				t.Errorf("CRD names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		opts Options
		want string
	}{
		"nowhere":             {opts: Options{SecretNamespace: "ns"}, want: "a service name or a URL is required"},
		"both":                {opts: Options{ServiceNamespace: "ns", ServiceName: "s", URL: "https://localhost:1/convert"}, want: "either a service or a URL, not both"},
		"no namespace":        {opts: Options{URL: "https://localhost:1/convert"}, want: "secret namespace is required"},
		"service without ns":  {opts: Options{ServiceName: "s", SecretNamespace: "ns"}, want: "service namespace is required"},
		"an IP address":       {opts: Options{URL: "https://127.0.0.1:1/convert", SecretNamespace: "ns"}, want: "host must be a DNS name such as localhost"},
		"http":                {opts: Options{URL: "http://localhost:1/convert", SecretNamespace: "ns"}, want: "scheme must be https"},
		"another path":        {opts: Options{URL: "https://localhost:1/", SecretNamespace: "ns"}, want: "path must be /convert"},
		"a bad port":          {opts: Options{URL: "https://localhost:1/convert", SecretNamespace: "ns", Port: 70000}, want: "port 70000 is not between 1 and 65535"},
		"a bad DNS name":      {opts: Options{URL: "https://localhost:1/convert", SecretNamespace: "ns", DNSNames: []string{"Not_A_Name"}}, want: `DNS name "Not_A_Name"`},
		"several at once too": {opts: Options{Port: -1}, want: "port -1 is not between 1 and 65535\nsecret namespace is required"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New() error %v, want one containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "invalid conversion webhook options: ") {
				t.Errorf("error %q does not say what was invalid", err)
			}
		})
	}
}

func TestServerOptions(t *testing.T) {
	t.Parallel()
	w, err := New(Options{URL: "https://localhost:9555/convert", Host: "127.0.0.1", Port: 9555, SecretNamespace: "kube-system", CertDir: "/certs"})
	if err != nil {
		t.Fatal(err)
	}
	got := w.ServerOptions()
	if got.Host != "127.0.0.1" || got.Port != 9555 || got.CertDir != "/certs" || got.CertName != CertName || got.KeyName != KeyName || len(got.TLSOpts) != 1 {
		t.Errorf("ServerOptions() = %+v", got)
	}
	config := &tls.Config{}
	got.TLSOpts[0](config)
	if _, err := config.GetCertificate(&tls.ClientHelloInfo{}); err == nil || !strings.Contains(err.Error(), "no serving certificate in /certs yet") {
		t.Errorf("GetCertificate() before the certificate exists: error %v", err)
	}
}

func TestCheckServer(t *testing.T) {
	t.Parallel()
	w, err := New(LocalOptions(9555, "/certs"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		server  crwebhook.Options
		wantErr string
	}{
		"created with ServerOptions":             {server: w.ServerOptions()},
		"controller-runtime's defaults":          {server: crwebhook.Options{}, wantErr: `was not created with the webhook's ServerOptions (host "127.0.0.1", port 9555)`},
		"the right port without the certificate": {server: crwebhook.Options{Host: "127.0.0.1", Port: 9555}, wantErr: "ServerOptions"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := w.checkServer(crwebhook.NewServer(tc.server))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkServer() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkServer() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestWriteCertFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "certs")
	steps := []struct {
		cert, key   string
		wantWritten bool
	}{
		{cert: "cert-1", key: "key-1", wantWritten: true},
		{cert: "cert-1", key: "key-1", wantWritten: false},
		{cert: "cert-2", key: "key-1", wantWritten: true},
	}
	for i, step := range steps {
		written, err := writeCertFiles(dir, []byte(step.cert), []byte(step.key))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if written != step.wantWritten {
			t.Errorf("step %d: written %v, want %v", i, written, step.wantWritten)
		}
		for name, want := range map[string]string{CertName: step.cert, KeyName: step.key} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(data) != want {
				t.Errorf("step %d: %s holds %q (%v), want %q", i, name, data, err, want)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("the directory holds %d files, want only the certificate and the key (no temporary files)", len(entries))
	}
}
