package bootstrap

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// Config is what a node's bootstrap hands to its kubelet.
type Config struct {
	// Family is the AMI family whose bootstrap read the user data: the hint
	// passed to Parse, or the detected one (AL2, AL2023, Bottlerocket or
	// Windows).
	Family string
	// ClusterName is the EKS cluster name.
	ClusterName string
	// APIServerEndpoint is the API server URL. Empty when the bootstrap
	// would look it up itself (AL2 without --apiserver-endpoint).
	APIServerEndpoint string
	// CABundle is the cluster CA as base64, as written in the user data.
	CABundle string
	// Labels are the labels the kubelet registers the Node with.
	Labels map[string]string
	// Taints are the taints the kubelet registers the Node with.
	Taints []corev1.Taint
	// MaxPods is the kubelet's max pods, nil when the user data does not set it.
	MaxPods *int32
	// ClusterDNS are the DNS server IPs given to pods.
	ClusterDNS []string
}

// familyWindows is the detected family of Windows user data when no hint
// names the Windows version.
const familyWindows = "Windows"

// Parse reads decoded user data as the node's bootstrap would. family is
// the EC2NodeClass amiFamily when known; "" or Custom detects the format
// from the content (a <powershell> block, a MIME document with a NodeConfig
// or a bootstrap.sh call, a NodeConfig YAML, Bottlerocket TOML or a shell
// script calling bootstrap.sh).
func Parse(userData []byte, family string) (Config, error) {
	s := string(userData)
	var (
		c   Config
		err error
	)
	switch family {
	case awsv1.AMIFamilyAL2:
		c, err = parseAL2(s)
	case awsv1.AMIFamilyAL2023:
		c, err = parseAL2023(s)
	case awsv1.AMIFamilyBottlerocket:
		c, err = parseBottlerocket(s)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		c, err = parseWindows(s)
	case "", awsv1.AMIFamilyCustom:
		c, err = detect(s)
		if err != nil {
			return Config{}, fmt.Errorf("parsing user data: %w", err)
		}
		return c, nil
	default:
		return Config{}, fmt.Errorf("parsing user data: unknown AMI family %q", family)
	}
	if err != nil {
		return Config{}, fmt.Errorf("parsing %s user data: %w", family, err)
	}
	c.Family = family
	return c, nil
}

// detect picks the format from the content.
func detect(s string) (Config, error) {
	trimmed := strings.TrimSpace(s)
	switch {
	case trimmed == "":
		return Config{}, errors.New("user data is empty")
	case strings.HasPrefix(strings.ToLower(trimmed), "<powershell>"):
		return withFamily(parseWindows(s))(familyWindows)
	case isMIME(trimmed):
		parts, err := parseMIME(s)
		if err != nil {
			return Config{}, err
		}
		for _, p := range parts {
			if isNodeConfigPart(p) {
				return withFamily(parseAL2023(s))(awsv1.AMIFamilyAL2023)
			}
		}
		return withFamily(parseAL2(s))(awsv1.AMIFamilyAL2)
	case strings.Contains(s, bootstrapScript):
		return withFamily(parseAL2(s))(awsv1.AMIFamilyAL2)
	case looksLikeNodeConfig(s):
		return withFamily(parseAL2023(s))(awsv1.AMIFamilyAL2023)
	case looksLikeBottlerocket(s):
		return withFamily(parseBottlerocket(s))(awsv1.AMIFamilyBottlerocket)
	}
	return Config{}, errors.New("user data is none of: a <powershell> script, a MIME document, a NodeConfig, Bottlerocket TOML, a script calling " + bootstrapScript)
}

func withFamily(c Config, err error) func(string) (Config, error) {
	return func(family string) (Config, error) {
		if err != nil {
			return Config{}, fmt.Errorf("reading it as %s: %w", family, err)
		}
		c.Family = family
		return c, nil
	}
}

// kubeletFlags are the kubelet settings read from command-line flags.
type kubeletFlags struct {
	labels     map[string]string
	taints     []corev1.Taint
	taintsSet  bool
	maxPods    *int32
	clusterDNS []string
}

// parseKubeletArgs reads the kubelet flags Config cares about, in either
// --flag=value or --flag value form. Repeated --node-labels accumulate, as
// the kubelet's map flag does; other repeated flags keep the last value.
func parseKubeletArgs(args []string) (kubeletFlags, error) {
	var f kubeletFlags
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		switch name {
		case "--node-labels", "--register-with-taints", "--max-pods", "--cluster-dns":
		default:
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return f, fmt.Errorf("kubelet flag %s has no value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "--node-labels":
			labels, err := parseLabels(value)
			if err != nil {
				return f, fmt.Errorf("kubelet flag --node-labels: %w", err)
			}
			if f.labels == nil {
				f.labels = map[string]string{}
			}
			for k, v := range labels {
				f.labels[k] = v
			}
		case "--register-with-taints":
			taints, err := parseTaints(value)
			if err != nil {
				return f, fmt.Errorf("kubelet flag --register-with-taints: %w", err)
			}
			f.taints, f.taintsSet = taints, true
		case "--max-pods":
			n, err := strconv.ParseInt(value, 10, 32)
			if err != nil {
				return f, fmt.Errorf("kubelet flag --max-pods: %w", err)
			}
			m := int32(n)
			f.maxPods = &m
		case "--cluster-dns":
			f.clusterDNS = splitList(value)
		}
	}
	return f, nil
}

// apply overrides c with the flags that were set: the kubelet prefers flags
// to its config file.
func (f kubeletFlags) apply(c *Config) {
	if f.labels != nil {
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		for k, v := range f.labels {
			c.Labels[k] = v
		}
	}
	if f.taintsSet {
		c.Taints = f.taints
	}
	if f.maxPods != nil {
		c.MaxPods = f.maxPods
	}
	if f.clusterDNS != nil {
		c.ClusterDNS = f.clusterDNS
	}
}

// parseLabels reads "k=v,k2=v2".
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("label %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseTaints reads "key=value:Effect,key:Effect".
func parseTaints(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, spec := range splitList(s) {
		i := strings.LastIndex(spec, ":")
		if i < 0 {
			return nil, fmt.Errorf("taint %q has no effect", spec)
		}
		key, value, _ := strings.Cut(spec[:i], "=")
		t, err := makeTaint(key, value, spec[i+1:])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func makeTaint(key, value, effect string) (corev1.Taint, error) {
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	if key == "" {
		return t, fmt.Errorf("taint %q has no key", t.ToString())
	}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return t, nil
	}
	return t, fmt.Errorf("taint %q has unknown effect %q", t.ToString(), effect)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
