package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
)

// Defaults of Options.
const (
	DefaultPort        = 9443
	DefaultServicePort = 443
	DefaultSecretName  = "dovetail-webhook-cert"
	// CertName and KeyName are the file names of the serving certificate
	// and key in CertDir, and their keys in the Secret (a kubernetes.io/tls
	// Secret mounted as a volume gives the same files).
	CertName = "tls.crt"
	KeyName  = "tls.key"
)

// DefaultCRDNames are the CRDs that convert through the webhook: every
// multi-version CRD of Dovetail.
func DefaultCRDNames() []string {
	return []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws"}
}

// Options configure the conversion webhook. Either ServiceName (in a
// cluster: the API server calls https://<service>.<namespace>.svc) or URL (the
// local control plane: the API server calls the controller's process
// directly) must be set.
type Options struct {
	// Host is the address the webhook server binds to; every interface when
	// empty.
	Host string
	// Port is the port the webhook server listens on; DefaultPort when 0.
	Port int
	// CertDir holds the serving certificate and key (CertName, KeyName).
	// In a cluster it is usually the Secret mounted as a volume; with
	// WriteCertFiles it is written from the Secret. Default: controller-runtime's
	// <tmp>/k8s-webhook-server/serving-certs.
	CertDir string
	// WriteCertFiles writes the serving certificate from the Secret into
	// CertDir whenever it changes. Set it when CertDir is not the Secret
	// mounted by the kubelet: for `dovetail up` and tests, or an emptyDir.
	WriteCertFiles bool

	// SecretNamespace and SecretName name the Secret in which the certificate
	// rotator keeps the CA and the serving certificate. The webhook creates it
	// when it is missing, and again if it is deleted (which makes the rotator
	// issue a new CA). SecretNamespace defaults to ServiceNamespace,
	// SecretName to DefaultSecretName.
	SecretNamespace string
	SecretName      string

	// ServiceNamespace, ServiceName and ServicePort name the Service in
	// front of the webhook server in a cluster (ServicePort defaults to
	// DefaultServicePort). The serving certificate is issued for
	// <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.
	ServiceNamespace string
	ServiceName      string
	ServicePort      int32
	// URL is where the API server calls the webhook when there is no
	// Service, e.g. https://localhost:9443/convert for the local control
	// plane. Its host must be a DNS name (localhost, not 127.0.0.1): the
	// certificate rotator issues DNS names only, and Go's TLS verification
	// matches an IP address only against IP names. Its path must be Path.
	URL string
	// DNSNames are further names for the serving certificate.
	DNSNames []string

	// CRDNames are the CRDs whose conversion webhook gets the CA;
	// DefaultCRDNames when empty. They must be installed with
	// crdinstall.WithWebhookConversion(crds, ClientConfig()).
	CRDNames []string
	// DefaultNodeClass is the NodeClass an unqualified v1beta1 nodeClassRef
	// means (conversion.Converter.DefaultNodeClass): EC2NodeClass when empty.
	DefaultNodeClass schema.GroupKind
}

// LocalOptions are the options of a controller that runs on the machine of
// the API server, as with `dovetail up`: the webhook server binds
// 127.0.0.1:port, the API server calls https://localhost:<port>/convert, the
// certificate is written into certDir (no kubelet mounts the Secret), and
// the Secret lives in kube-system.
func LocalOptions(port int, certDir string) Options {
	return Options{
		Host:            "127.0.0.1",
		Port:            port,
		URL:             "https://" + net.JoinHostPort("localhost", strconv.Itoa(port)) + Path,
		CertDir:         certDir,
		WriteCertFiles:  true,
		SecretNamespace: "kube-system",
	}
}

// complete returns a copy of o with the defaults filled in, or the first
// invalid setting.
func (o Options) complete() (Options, error) {
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.ServicePort == 0 {
		o.ServicePort = DefaultServicePort
	}
	if o.CertDir == "" {
		o.CertDir = filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
	}
	if o.SecretNamespace == "" {
		o.SecretNamespace = o.ServiceNamespace
	}
	if o.SecretName == "" {
		o.SecretName = DefaultSecretName
	}
	if len(o.CRDNames) == 0 {
		o.CRDNames = DefaultCRDNames()
	}
	var errs []error
	if o.Port < 1 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is not between 1 and 65535", o.Port))
	}
	if o.SecretNamespace == "" {
		errs = append(errs, errors.New("secret namespace is required (or a service namespace)"))
	}
	switch {
	case o.URL != "" && o.ServiceName != "":
		errs = append(errs, errors.New("set either a service or a URL, not both"))
	case o.URL != "":
		if _, err := o.urlHost(); err != nil {
			errs = append(errs, err)
		}
	case o.ServiceName != "":
		if o.ServiceNamespace == "" {
			errs = append(errs, errors.New("service namespace is required with a service name"))
		}
	default:
		errs = append(errs, errors.New("a service name or a URL is required"))
	}
	for _, name := range o.DNSNames {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("DNS name %q: %v", name, msgs))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("invalid conversion webhook options: %w", err)
	}
	return o, nil
}

// urlHost returns the host of URL, which must be https, name a DNS name and
// end in Path.
func (o Options) urlHost() (string, error) {
	u, err := url.Parse(o.URL)
	if err != nil {
		return "", fmt.Errorf("URL %q: %w", o.URL, err)
	}
	host := u.Hostname()
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("URL %q: scheme must be https", o.URL)
	case u.Path != Path:
		return "", fmt.Errorf("URL %q: path must be %s", o.URL, Path)
	case net.ParseIP(host) != nil:
		return "", fmt.Errorf("URL %q: host must be a DNS name such as localhost: the certificate rotator issues no IP names", o.URL)
	case len(validation.IsDNS1123Subdomain(host)) > 0:
		return "", fmt.Errorf("URL %q: host %q is not a DNS name", o.URL, host)
	}
	return host, nil
}

// serverName is the name the API server checks the serving certificate
// against: the URL's host or the Service's DNS name.
func (o Options) serverName() string {
	if o.URL != "" {
		host, _ := o.urlHost() // validated by complete
		return host
	}
	return o.ServiceName + "." + o.ServiceNamespace + ".svc"
}

// extraDNSNames are the names of the serving certificate beside serverName.
func (o Options) extraDNSNames() []string {
	var names []string
	if o.URL == "" {
		names = append(names, o.serverName()+".cluster.local")
	}
	return append(names, o.DNSNames...)
}

// ClientConfig is how the API server reaches the webhook, for
// crdinstall.WithWebhookConversion. It has no caBundle: the certificate
// rotator injects it.
func (o Options) ClientConfig() apiextensionsv1.WebhookClientConfig {
	if o.URL != "" {
		return apiextensionsv1.WebhookClientConfig{URL: ptr.To(o.URL)}
	}
	port := o.ServicePort
	if port == 0 {
		port = DefaultServicePort
	}
	return apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
		Namespace: o.ServiceNamespace, Name: o.ServiceName, Path: ptr.To(Path), Port: ptr.To(port),
	}}
}

// localAddress is where the readiness check dials the webhook server.
func (o Options) localAddress() string {
	host := o.Host
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(o.Port))
}
