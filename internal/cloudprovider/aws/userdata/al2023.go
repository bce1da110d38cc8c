package userdata

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"mime"

	"sigs.k8s.io/yaml"
)

const (
	nodeConfigContentType = "application/node.eks.aws"
	nodeConfigAPIVersion  = "node.eks.aws/v1alpha1"
	nodeConfigKind        = "NodeConfig"
	nodeConfigComment     = "# Karpenter Generated NodeConfig\n"
)

// nodeConfig is the subset of nodeadm's NodeConfig that Karpenter writes.
// Field order does not matter: the YAML marshaller sorts keys.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   struct{}       `json:"metadata"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster    nodeConfigCluster  `json:"cluster"`
	Containerd struct{}           `json:"containerd"`
	Instance   nodeConfigInstance `json:"instance"`
	Kubelet    nodeConfigKubelet  `json:"kubelet"`
}

type nodeConfigCluster struct {
	Name                 string `json:"name,omitempty"`
	APIServerEndpoint    string `json:"apiServerEndpoint,omitempty"`
	CertificateAuthority []byte `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr,omitempty"`
}

type nodeConfigInstance struct {
	LocalStorage struct {
		Strategy string `json:"strategy,omitempty"`
	} `json:"localStorage"`
}

type nodeConfigKubelet struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

// renderAL2023 writes a MIME document: the user's parts, then Karpenter's
// NodeConfig, which nodeadm merges last so its values win.
func renderAL2023(o Options) (string, error) {
	if o.ClusterCIDR == "" {
		return "", errors.New("the cluster's service CIDR is not known yet")
	}
	parts, err := userParts(o.CustomUserData, false, al2023ContentType)
	if err == nil {
		err = validateNodeConfigParts(parts)
	}
	if err != nil {
		return "", &InvalidUserDataError{Family: o.Family, Err: err}
	}
	nc, err := al2023NodeConfig(o)
	if err != nil {
		return "", err
	}
	parts = append(parts, mimePart{
		header:  [][2]string{{"Content-Type", nodeConfigContentType}},
		content: nc,
	})
	return writeMIME(parts), nil
}

func al2023NodeConfig(o Options) (string, error) {
	nc := nodeConfig{APIVersion: nodeConfigAPIVersion, Kind: nodeConfigKind}
	nc.Spec.Cluster = nodeConfigCluster{
		Name:              o.ClusterName,
		APIServerEndpoint: o.ClusterEndpoint,
		CIDR:              o.ClusterCIDR,
	}
	if o.CABundle != "" {
		ca, err := base64.StdEncoding.DecodeString(o.CABundle)
		if err != nil {
			return "", fmt.Errorf("decoding the cluster CA bundle: %w", err)
		}
		nc.Spec.Cluster.CertificateAuthority = ca
	}
	if o.raid0() {
		nc.Spec.Instance.LocalStorage.Strategy = "RAID0"
	}
	config, err := al2023KubeletConfig(o)
	if err != nil {
		return "", err
	}
	nc.Spec.Kubelet.Config = config
	if labels := o.nodeLabels(); len(labels) > 0 {
		nc.Spec.Kubelet.Flags = []string{"--node-labels=" + dquote(joinSorted(labels, "="))}
	}
	out, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("marshalling NodeConfig: %w", err)
	}
	return nodeConfigComment + string(out), nil
}

// al2023KubeletConfig returns spec.kubelet as upstream KubeletConfiguration
// fields (the v1 JSON names are the upstream names) plus the DNS IPs and
// registerWithTaints.
func al2023KubeletConfig(o Options) (map[string]any, error) {
	k := o.kubelet()
	k.ClusterDNS = o.clusterDNS()
	raw, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("marshalling kubelet configuration: %w", err)
	}
	config := map[string]any{}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("unmarshalling kubelet configuration: %w", err)
	}
	if taints := o.taints(); len(taints) > 0 {
		config["registerWithTaints"] = taints
	}
	return config, nil
}

// al2023ContentType picks the part type of non-MIME user data: a YAML
// mapping is a NodeConfig, anything else a shell script.
func al2023ContentType(s string) string {
	if isYAMLMap(s) {
		return nodeConfigContentType
	}
	return shellContentType
}

// isYAMLMap reports whether s is a YAML document whose top level is a
// mapping, which Karpenter treats as a NodeConfig.
func isYAMLMap(s string) bool {
	var m map[string]any
	return yaml.Unmarshal([]byte(s), &m) == nil && m != nil
}

// userNodeConfig is the shape a user's NodeConfig must have. It is loose on
// purpose (the CA is a plain string, unknown fields are allowed) so that
// it rejects only what nodeadm could never read.
type userNodeConfig struct {
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
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// validateNodeConfig checks that a YAML document is a NodeConfig.
func validateNodeConfig(s string) error {
	var nc userNodeConfig
	if err := yaml.Unmarshal([]byte(s), &nc); err != nil {
		return fmt.Errorf("parsing NodeConfig YAML: %w", err)
	}
	if nc.APIVersion != nodeConfigAPIVersion || nc.Kind != nodeConfigKind {
		return fmt.Errorf("YAML document has apiVersion %q and kind %q, want apiVersion %q and kind %q",
			nc.APIVersion, nc.Kind, nodeConfigAPIVersion, nodeConfigKind)
	}
	return nil
}

// validateNodeConfigParts checks every application/node.eks.aws part.
func validateNodeConfigParts(parts []mimePart) error {
	for i, p := range parts {
		if !isNodeConfigType(p.contentType()) {
			continue
		}
		if err := validateNodeConfig(p.content); err != nil {
			return fmt.Errorf("part %d: %w", i+1, err)
		}
	}
	return nil
}

func isNodeConfigType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == nodeConfigContentType
}
