package userdata

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

// MaxSize is EC2's limit on the size of raw (not base64-encoded) user data,
// in bytes.
const MaxSize = 16384

// DoNotSyncTaintsLabelKey is the label Karpenter puts on every node it
// bootstraps (except Custom) so that core does not copy the NodeClaim's
// taints onto the Node: the kubelet already registers them.
const DoNotSyncTaintsLabelKey = karpv1.Group + "/do-not-sync-taints"

// Options is everything needed to render the user data of one node. The
// caller resolves every value; Render does no I/O.
type Options struct {
	// Family is the EC2NodeClass amiFamily (awsv1.AMIFamilyAL2023, ...).
	Family string
	// ClusterName is the cluster name (--cluster-name).
	ClusterName string
	// ClusterEndpoint is the API server URL, used verbatim.
	ClusterEndpoint string
	// CABundle is the cluster CA, PEM bytes encoded as standard base64.
	// Empty means none.
	CABundle string
	// ClusterCIDR is the service CIDR; AL2023 requires it.
	ClusterCIDR string
	// ClusterDNS is the cluster DNS IP list discovered by the caller (the
	// kube-dns Service ClusterIP). Kubelet.ClusterDNS wins when it is set.
	ClusterDNS []string
	// Kubelet is the class's spec.kubelet with MaxPods defaulted by the
	// caller (the instance type's pods capacity when the user left it unset).
	Kubelet *awsv1.KubeletConfiguration
	// Labels are the NodeClaim's labels. Render adds the capacity-type and
	// do-not-sync-taints labels and drops the labels the kubelet may not set.
	Labels map[string]string
	// Taints are the NodeClaim's taints followed by its startup taints.
	// Render appends karpenter.sh/unregistered:NoExecute when missing.
	Taints []corev1.Taint
	// InstanceStorePolicy is the class's spec.instanceStorePolicy.
	InstanceStorePolicy *awsv1.InstanceStorePolicy
	// CustomUserData is the class's spec.userData.
	CustomUserData *string
	// AMIVersion is the Bottlerocket version of the AMI ("1.46.0", "v1.46.0"
	// or "latest"), used to pick the RAID0 bind command. See
	// BottlerocketVersion.
	AMIVersion string
	// CapacityType is the chosen karpenter.sh/capacity-type value.
	CapacityType string
}

// InvalidUserDataError reports a spec.userData that cannot be merged into the
// format of its AMI family.
type InvalidUserDataError struct {
	// Family is the AMI family the user data was read for.
	Family string
	// Err is the problem found.
	Err error
}

// Error implements error.
func (e *InvalidUserDataError) Error() string {
	return fmt.Sprintf("spec.userData is not valid %s user data: %v", e.Family, e.Err)
}

// Unwrap returns the underlying problem.
func (e *InvalidUserDataError) Unwrap() error { return e.Err }

// IsInvalidUserData reports whether err is, or wraps, an InvalidUserDataError.
func IsInvalidUserData(err error) bool {
	var e *InvalidUserDataError
	return errors.As(err, &e)
}

// ErrTooLarge is wrapped by the error returned for user data over MaxSize.
var ErrTooLarge = errors.New("user data exceeds the EC2 limit")

// Render returns the user data of a node as standard base64, ready for
// LaunchTemplateData.UserData.
func Render(o Options) (string, error) {
	raw, err := RenderRaw(o)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(raw), nil
}

// RenderRaw returns the user data of a node before base64 encoding. Its
// length is what EC2 checks against MaxSize.
func RenderRaw(o Options) ([]byte, error) {
	var (
		out string
		err error
	)
	switch o.Family {
	case awsv1.AMIFamilyAL2:
		out, err = renderAL2(o)
	case awsv1.AMIFamilyAL2023:
		out, err = renderAL2023(o)
	case awsv1.AMIFamilyBottlerocket:
		out, err = renderBottlerocket(o)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		out, err = renderWindows(o)
	case awsv1.AMIFamilyCustom:
		out = deref(o.CustomUserData)
	default:
		return nil, fmt.Errorf("rendering user data: unknown AMI family %q", o.Family)
	}
	if err != nil {
		return nil, fmt.Errorf("rendering %s user data: %w", o.Family, err)
	}
	if err := checkSize(len(out)); err != nil {
		return nil, fmt.Errorf("rendering %s user data: %w", o.Family, err)
	}
	return []byte(out), nil
}

func checkSize(n int) error {
	if n > MaxSize {
		return fmt.Errorf("%w: %d bytes, the limit is %d bytes", ErrTooLarge, n, MaxSize)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// clusterDNS returns the DNS IPs: spec.kubelet.clusterDNS, else the
// discovered ones.
func (o Options) clusterDNS() []string {
	if o.Kubelet != nil && len(o.Kubelet.ClusterDNS) > 0 {
		return o.Kubelet.ClusterDNS
	}
	return o.ClusterDNS
}

func (o Options) kubelet() awsv1.KubeletConfiguration {
	if o.Kubelet == nil {
		return awsv1.KubeletConfiguration{}
	}
	return *o.Kubelet
}

func (o Options) raid0() bool {
	return o.InstanceStorePolicy != nil && *o.InstanceStorePolicy == awsv1.InstanceStorePolicyRAID0
}

// ipv6DNS reports whether the first DNS IP is IPv6, which makes the cluster
// an IPv6 cluster.
func (o Options) ipv6DNS() bool {
	dns := o.clusterDNS()
	if len(dns) == 0 {
		return false
	}
	ip := net.ParseIP(dns[0])
	return ip != nil && ip.To4() == nil
}

// nodeLabels returns the labels the kubelet registers: the NodeClaim's
// labels plus capacity type and do-not-sync-taints, without the labels the
// NodeRestriction admission plugin would reject.
func (o Options) nodeLabels() map[string]string {
	out := map[string]string{}
	for k, v := range o.Labels {
		out[k] = v
	}
	if o.CapacityType != "" {
		out[karpv1.CapacityTypeLabelKey] = o.CapacityType
	}
	out[DoNotSyncTaintsLabelKey] = "true"
	for k := range out {
		if restrictedLabel(k) {
			delete(out, k)
		}
	}
	return out
}

// restrictedLabel reports whether the label's domain is kubernetes.io,
// k8s.io, node-restriction.kubernetes.io or a subdomain of one.
func restrictedLabel(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	domain = strings.ToLower(domain)
	return domain == "kubernetes.io" || domain == "k8s.io" ||
		strings.HasSuffix(domain, ".kubernetes.io") || strings.HasSuffix(domain, ".k8s.io")
}

// taints returns the claim taints with the unregistered taint appended when
// missing.
func (o Options) taints() []corev1.Taint {
	out := append([]corev1.Taint(nil), o.Taints...)
	unregistered := karpv1.UnregisteredNoExecuteTaint()
	for _, t := range out {
		if t.MatchTaint(&unregistered) {
			return out
		}
	}
	return append(out, unregistered)
}

// joinSorted renders a map as "k<sep>v,k<sep>v" with sorted keys.
func joinSorted(m map[string]string, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+sep+m[k])
	}
	return strings.Join(parts, ",")
}
