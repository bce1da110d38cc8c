package bootstrap

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	nodeConfigAPIVersion = "node.eks.aws/v1alpha1"
	nodeConfigKind       = "NodeConfig"
)

// nodeConfig is the part of nodeadm's NodeConfig that decides how the node
// registers.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority string `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]json.RawMessage `json:"config"`
			Flags  []string                   `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// parseAL2023 reads the NodeConfig documents of the user data (every
// application/node.eks.aws part of a MIME document, or the whole text) and
// merges them in order as nodeadm does: a later document's set fields win,
// kubelet config keys are merged one by one, flags are appended.
func parseAL2023(s string) (Config, error) {
	var docs []string
	if isMIME(strings.TrimSpace(s)) {
		parts, err := parseMIME(s)
		if err != nil {
			return Config{}, err
		}
		for _, p := range parts {
			if isNodeConfigPart(p) {
				docs = append(docs, p.body)
			}
		}
	} else {
		docs = []string{s}
	}
	if len(docs) == 0 {
		return Config{}, errors.New("no application/node.eks.aws NodeConfig part")
	}
	var merged nodeConfig
	merged.Spec.Kubelet.Config = map[string]json.RawMessage{}
	for i, doc := range docs {
		var nc nodeConfig
		if err := yaml.Unmarshal([]byte(doc), &nc); err != nil {
			return Config{}, fmt.Errorf("NodeConfig %d: %w", i+1, err)
		}
		if nc.APIVersion != nodeConfigAPIVersion || nc.Kind != nodeConfigKind {
			return Config{}, fmt.Errorf("NodeConfig %d: apiVersion %q kind %q, want %s %s", i+1, nc.APIVersion, nc.Kind, nodeConfigAPIVersion, nodeConfigKind)
		}
		mc, c := &merged.Spec.Cluster, nc.Spec.Cluster
		override(&mc.Name, c.Name)
		override(&mc.APIServerEndpoint, c.APIServerEndpoint)
		override(&mc.CertificateAuthority, c.CertificateAuthority)
		override(&mc.CIDR, c.CIDR)
		for k, v := range nc.Spec.Kubelet.Config {
			merged.Spec.Kubelet.Config[k] = v
		}
		merged.Spec.Kubelet.Flags = append(merged.Spec.Kubelet.Flags, nc.Spec.Kubelet.Flags...)
	}
	return nodeConfigToConfig(merged)
}

func override(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

// nodeConfigToConfig checks what nodeadm requires and reads the kubelet
// settings: the config file first, flags over it.
func nodeConfigToConfig(nc nodeConfig) (Config, error) {
	cl := nc.Spec.Cluster
	required := []struct{ field, value string }{
		{"name", cl.Name}, {"apiServerEndpoint", cl.APIServerEndpoint},
		{"certificateAuthority", cl.CertificateAuthority}, {"cidr", cl.CIDR},
	}
	for _, r := range required {
		if r.value == "" {
			return Config{}, fmt.Errorf("merged NodeConfig has no spec.cluster.%s", r.field)
		}
	}
	if _, err := base64.StdEncoding.DecodeString(cl.CertificateAuthority); err != nil {
		return Config{}, fmt.Errorf("merged NodeConfig spec.cluster.certificateAuthority: %w", err)
	}
	c := Config{ClusterName: cl.Name, APIServerEndpoint: cl.APIServerEndpoint, CABundle: cl.CertificateAuthority}
	kc := nc.Spec.Kubelet.Config
	if raw, ok := kc["maxPods"]; ok {
		var n int32
		if err := json.Unmarshal(raw, &n); err != nil {
			return Config{}, fmt.Errorf("kubelet config maxPods: %w", err)
		}
		c.MaxPods = &n
	}
	if raw, ok := kc["clusterDNS"]; ok {
		if err := json.Unmarshal(raw, &c.ClusterDNS); err != nil {
			return Config{}, fmt.Errorf("kubelet config clusterDNS: %w", err)
		}
	}
	if raw, ok := kc["registerWithTaints"]; ok {
		var taints []corev1.Taint
		if err := json.Unmarshal(raw, &taints); err != nil {
			return Config{}, fmt.Errorf("kubelet config registerWithTaints: %w", err)
		}
		for _, t := range taints {
			if _, err := makeTaint(t.Key, t.Value, string(t.Effect)); err != nil {
				return Config{}, fmt.Errorf("kubelet config registerWithTaints: %w", err)
			}
		}
		c.Taints = taints
	}
	// nodeadm passes the flags to the kubelet through a systemd environment
	// file, which removes the quotes.
	args, err := shellWords(strings.Join(nc.Spec.Kubelet.Flags, " "))
	if err != nil {
		return Config{}, fmt.Errorf("kubelet flags: %w", err)
	}
	flags, err := parseKubeletArgs(args)
	if err != nil {
		return Config{}, err
	}
	flags.apply(&c)
	return c, nil
}

// looksLikeNodeConfig reports whether non-MIME user data is a NodeConfig.
func looksLikeNodeConfig(s string) bool {
	var tm struct {
		Kind string `json:"kind"`
	}
	return yaml.Unmarshal([]byte(s), &tm) == nil && tm.Kind == nodeConfigKind
}
