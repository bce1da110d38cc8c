package bootstrap

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
)

// brSettings is the part of Bottlerocket's settings.kubernetes that decides
// how the node registers.
type brSettings struct {
	Settings struct {
		Kubernetes struct {
			ClusterName        string            `toml:"cluster-name"`
			APIServer          string            `toml:"api-server"`
			ClusterCertificate string            `toml:"cluster-certificate"`
			NodeLabels         map[string]string `toml:"node-labels"`
			NodeTaints         map[string]any    `toml:"node-taints"`
			MaxPods            *int32            `toml:"max-pods"`
			ClusterDNSIP       any               `toml:"cluster-dns-ip"`
		} `toml:"kubernetes"`
	} `toml:"settings"`
}

// looksLikeBottlerocket reports whether the user data is TOML with a
// [settings] table.
func looksLikeBottlerocket(s string) bool {
	md, err := toml.Decode(s, &struct{}{})
	return err == nil && md.IsDefined("settings")
}

// parseBottlerocket reads the TOML settings. Bottlerocket's kubelet does not
// start without a cluster name and an API server.
func parseBottlerocket(s string) (Config, error) {
	var doc brSettings
	if _, err := toml.Decode(s, &doc); err != nil {
		return Config{}, fmt.Errorf("parsing TOML: %w", err)
	}
	k := doc.Settings.Kubernetes
	if k.ClusterName == "" || k.APIServer == "" {
		return Config{}, errors.New("settings.kubernetes needs cluster-name and api-server")
	}
	c := Config{
		ClusterName:       k.ClusterName,
		APIServerEndpoint: k.APIServer,
		CABundle:          k.ClusterCertificate,
		Labels:            k.NodeLabels,
		MaxPods:           k.MaxPods,
	}
	switch dns := k.ClusterDNSIP.(type) {
	case nil:
	case string:
		c.ClusterDNS = []string{dns}
	case []any:
		for _, ip := range dns {
			s, ok := ip.(string)
			if !ok {
				return Config{}, fmt.Errorf("settings.kubernetes.cluster-dns-ip has a non-string entry %v", ip)
			}
			c.ClusterDNS = append(c.ClusterDNS, s)
		}
	default:
		return Config{}, fmt.Errorf("settings.kubernetes.cluster-dns-ip is a %T, want a string or a list", dns)
	}
	taints, err := brTaints(k.NodeTaints)
	if err != nil {
		return Config{}, err
	}
	c.Taints = taints
	return c, nil
}

// brTaints reads node-taints: key = ["value:Effect", ...] (or one string),
// in key order.
func brTaints(m map[string]any) ([]corev1.Taint, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []corev1.Taint
	for _, key := range keys {
		var specs []string
		switch v := m[key].(type) {
		case string:
			specs = []string{v}
		case []any:
			for _, e := range v {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("settings.kubernetes.node-taints.%s has a non-string entry %v", key, e)
				}
				specs = append(specs, s)
			}
		default:
			return nil, fmt.Errorf("settings.kubernetes.node-taints.%s is a %T, want a list of \"value:Effect\"", key, v)
		}
		for _, spec := range specs {
			i := strings.LastIndex(spec, ":")
			if i < 0 {
				return nil, fmt.Errorf("settings.kubernetes.node-taints.%s: %q is not value:Effect", key, spec)
			}
			t, err := makeTaint(key, spec[:i], spec[i+1:])
			if err != nil {
				return nil, fmt.Errorf("settings.kubernetes.node-taints: %w", err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}
