package localcluster

import (
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
)

// serverVersion is a discovery.ServerVersionInterface answering info or err.
type serverVersion struct {
	info *version.Info
	err  error
}

func (v serverVersion) ServerVersion() (*version.Info, error) { return v.info, v.err }

func TestKubernetesVersion(t *testing.T) {
	cases := map[string]struct {
		versions serverVersion
		want     string
		wantErr  bool
	}{
		"release":        {versions: serverVersion{info: &version.Info{Major: "1", Minor: "36", GitVersion: "v1.36.4"}}, want: "1.36"},
		"plus suffix":    {versions: serverVersion{info: &version.Info{Major: "1", Minor: "35+", GitVersion: "v1.35.2-eks-1"}}, want: "1.35"},
		"no minor":       {versions: serverVersion{info: &version.Info{GitVersion: "v0.0.0-master+$Format:%H$"}}, wantErr: true},
		"discovery down": {versions: serverVersion{err: errors.New("connection refused")}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := kubernetesVersion(tc.versions)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("kubernetesVersion = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestEndpointConfigTakesTheControlPlanesFacts checks EndpointConfig against
// an API server that reports version 1.31 (not eks.DefaultVersion): the endpoint is configured for
// that version, the API server's URL and CA, and its service range.
func TestEndpointConfigTakesTheControlPlanesFacts(t *testing.T) {
	apiServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"31","gitVersion":"v1.31.7"}`))
	}))
	defer apiServer.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiServer.Certificate().Raw})
	cp := &controlplane.ControlPlane{RESTConfig: &rest.Config{Host: apiServer.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}}
	cfg, err := EndpointConfig(cp, localaws.Config{ClusterName: "c1", Seed: 3})
	if err != nil {
		t.Fatalf("EndpointConfig: %v", err)
	}
	if cfg.KubernetesVersion != "1.31" || cfg.ServiceCIDR != controlplane.ServiceClusterIPRange ||
		cfg.ClusterEndpoint != apiServer.URL || string(cfg.ClusterCA) != string(ca) || cfg.ClusterName != "c1" || cfg.Seed != 3 {
		t.Errorf("EndpointConfig = version %q, service CIDR %q, endpoint %q, CA %q, cluster %q, seed %d",
			cfg.KubernetesVersion, cfg.ServiceCIDR, cfg.ClusterEndpoint, cfg.ClusterCA, cfg.ClusterName, cfg.Seed)
	}
}
