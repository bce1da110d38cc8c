package userdata

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// brKubernetes is settings.kubernetes as Karpenter types it. Keys not in
// this struct are dropped from the user's TOML, as Karpenter drops them.
type brKubernetes struct {
	APIServer                          *string                         `toml:"api-server,omitempty"`
	CloudProvider                      *string                         `toml:"cloud-provider,omitempty"`
	ClusterCertificate                 *string                         `toml:"cluster-certificate,omitempty"`
	ClusterName                        *string                         `toml:"cluster-name,omitempty"`
	ClusterDNSIP                       any                             `toml:"cluster-dns-ip,omitempty"`
	MaxPods                            *int32                          `toml:"max-pods,omitempty"`
	AllowedUnsafeSysctls               []string                        `toml:"allowed-unsafe-sysctls,omitempty"`
	ServerTLSBootstrap                 *bool                           `toml:"server-tls-bootstrap,omitempty"`
	RegistryQPS                        *int32                          `toml:"registry-qps,omitempty"`
	RegistryBurst                      *int32                          `toml:"registry-burst,omitempty"`
	EventQPS                           *int32                          `toml:"event-qps,omitempty"`
	EventBurst                         *int32                          `toml:"event-burst,omitempty"`
	KubeAPIQPS                         *int32                          `toml:"kube-api-qps,omitempty"`
	KubeAPIBurst                       *int32                          `toml:"kube-api-burst,omitempty"`
	ContainerLogMaxSize                *string                         `toml:"container-log-max-size,omitempty"`
	ContainerLogMaxFiles               *int                            `toml:"container-log-max-files,omitempty"`
	CPUManagerPolicy                   *string                         `toml:"cpu-manager-policy,omitempty"`
	CPUManagerPolicyOptions            any                             `toml:"cpu-manager-policy-options,omitempty"`
	CPUManagerReconcilePeriod          *string                         `toml:"cpu-manager-reconcile-period,omitempty"`
	MemoryManagerPolicy                *string                         `toml:"memory-manager-policy,omitempty"`
	TopologyManagerScope               *string                         `toml:"topology-manager-scope,omitempty"`
	TopologyManagerPolicy              *string                         `toml:"topology-manager-policy,omitempty"`
	ImageGCHighThresholdPercent        *string                         `toml:"image-gc-high-threshold-percent,omitempty"`
	ImageGCLowThresholdPercent         *string                         `toml:"image-gc-low-threshold-percent,omitempty"`
	IDsPerPod                          *int64                          `toml:"ids-per-pod,omitempty"`
	CPUCFSQuotaEnforced                *bool                           `toml:"cpu-cfs-quota-enforced,omitempty"`
	ShutdownGracePeriod                *string                         `toml:"shutdown-grace-period,omitempty"`
	ShutdownGracePeriodCriticalPods    *string                         `toml:"shutdown-grace-period-for-critical-pods,omitempty"`
	ClusterDomain                      *string                         `toml:"cluster-domain,omitempty"`
	SeccompDefault                     *bool                           `toml:"seccomp-default,omitempty"`
	PodPidsLimit                       *int64                          `toml:"pod-pids-limit,omitempty"`
	DeviceOwnershipFromSecurityContext *bool                           `toml:"device-ownership-from-security-context,omitempty"`
	SingleProcessOOMKill               *bool                           `toml:"single-process-oom-kill,omitempty"`
	ContainerLogMaxWorkers             *int32                          `toml:"container-log-max-workers,omitempty"`
	ContainerLogMonitorInterval        *string                         `toml:"container-log-monitor-interval,omitempty"`
	HostnameOverrideSource             *string                         `toml:"hostname-override-source,omitempty"`
	LogLevel                           any                             `toml:"log-level,omitempty"`
	EvictionMaxPodGracePeriod          *int32                          `toml:"eviction-max-pod-grace-period,omitempty"`
	NodeLabels                         map[string]string               `toml:"node-labels,omitempty"`
	NodeTaints                         map[string][]string             `toml:"node-taints,omitempty"`
	EvictionHard                       map[string]string               `toml:"eviction-hard,omitempty"`
	EvictionSoft                       map[string]string               `toml:"eviction-soft,omitempty"`
	EvictionSoftGracePeriod            map[string]string               `toml:"eviction-soft-grace-period,omitempty"`
	KubeReserved                       map[string]string               `toml:"kube-reserved,omitempty"`
	SystemReserved                     map[string]string               `toml:"system-reserved,omitempty"`
	TopologyManagerPolicyOptions       *brTopologyOptions              `toml:"topology-manager-policy-options,omitempty"`
	CredentialProviders                map[string]brCredentialProvider `toml:"credential-providers,omitempty"`
	StaticPods                         map[string]brStaticPod          `toml:"static-pods,omitempty"`
}

type brTopologyOptions struct {
	PreferClosestNUMANodes *bool  `toml:"prefer-closest-numa-nodes,omitempty"`
	MaxAllowableNUMANodes  *int32 `toml:"max-allowable-numa-nodes,omitempty"`
}

type brCredentialProvider struct {
	Enabled       *bool             `toml:"enabled,omitempty"`
	CacheDuration *string           `toml:"cache-duration,omitempty"`
	ImagePatterns []string          `toml:"image-patterns,omitempty"`
	Environment   map[string]string `toml:"environment,omitempty"`
}

type brStaticPod struct {
	Enabled  *bool   `toml:"enabled,omitempty"`
	Manifest *string `toml:"manifest,omitempty"`
}

type brBootstrapCommand struct {
	Commands  [][]string `toml:"commands"`
	Mode      string     `toml:"mode,omitempty"`
	Essential bool       `toml:"essential"`
}

const brMountCommandName = "000-mount-instance-storage"

// parseBottlerocket reads the user's TOML: settings.kubernetes into the
// typed struct, settings.bootstrap-commands typed too, every other settings
// subtable as is. Top-level keys other than settings are dropped.
func parseBottlerocket(s string) (*brKubernetes, map[string]brBootstrapCommand, map[string]any, error) {
	var doc struct {
		Settings map[string]toml.Primitive `toml:"settings"`
	}
	md, err := toml.Decode(s, &doc)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parsing TOML: %w", err)
	}
	if isNonTable(md, "settings") {
		return nil, nil, nil, fmt.Errorf("parsing TOML: settings is a %s, want a table", md.Type("settings"))
	}
	for _, sub := range []string{"kubernetes", "bootstrap-commands"} {
		if isNonTable(md, "settings", sub) {
			return nil, nil, nil, fmt.Errorf("parsing TOML: settings.%s is a %s, want a table", sub, md.Type("settings", sub))
		}
	}
	k8s := &brKubernetes{}
	cmds := map[string]brBootstrapCommand{}
	other := map[string]any{}
	for name, prim := range doc.Settings {
		switch name {
		case "kubernetes":
			err = md.PrimitiveDecode(prim, k8s)
		case "bootstrap-commands":
			err = md.PrimitiveDecode(prim, &cmds)
		default:
			var v any
			err = md.PrimitiveDecode(prim, &v)
			other[name] = v
		}
		if err != nil {
			return nil, nil, nil, fmt.Errorf("decoding settings.%s: %w", name, err)
		}
	}
	return k8s, cmds, other, nil
}

// renderBottlerocket merges Karpenter's settings into the user's TOML.
func renderBottlerocket(o Options) (string, error) {
	k8s, cmds, settings, err := parseBottlerocket(deref(o.CustomUserData))
	if err != nil {
		return "", &InvalidUserDataError{Family: o.Family, Err: err}
	}
	k8s.ClusterName = &o.ClusterName
	k8s.APIServer = &o.ClusterEndpoint
	if o.CABundle != "" {
		k8s.ClusterCertificate = &o.CABundle
	}
	if k8s.NodeLabels == nil {
		k8s.NodeLabels = map[string]string{}
	}
	for k, v := range o.nodeLabels() {
		k8s.NodeLabels[k] = v
	}
	k8s.NodeTaints = map[string][]string{}
	for _, t := range o.taints() {
		k8s.NodeTaints[t.Key] = append(k8s.NodeTaints[t.Key], t.Value+":"+string(t.Effect))
	}
	if dns := o.clusterDNS(); len(dns) > 0 {
		k8s.ClusterDNSIP = dns[0]
	}
	applyBottlerocketKubelet(k8s, o)
	if len(k8s.NodeLabels) == 0 {
		k8s.NodeLabels = nil
	}
	if o.raid0() {
		cmds[brMountCommandName] = brBootstrapCommand{
			Commands:  [][]string{{"apiclient", "ephemeral-storage", "init"}, brBindCommand(o.AMIVersion)},
			Mode:      "always",
			Essential: true,
		}
	}
	settings["kubernetes"] = k8s
	if len(cmds) > 0 {
		settings["bootstrap-commands"] = cmds
	}
	var buf bytes.Buffer
	enc := toml.NewEncoder(&buf)
	enc.Indent = ""
	if err := enc.Encode(map[string]any{"settings": settings}); err != nil {
		return "", fmt.Errorf("encoding TOML: %w", err)
	}
	return buf.String(), nil
}

// applyBottlerocketKubelet writes the spec.kubelet fields that are set.
// podsPerCore is not supported by Bottlerocket and never written.
func applyBottlerocketKubelet(k8s *brKubernetes, o Options) {
	k := o.kubelet()
	if k.MaxPods != nil {
		k8s.MaxPods = k.MaxPods
	}
	if k.SystemReserved != nil {
		k8s.SystemReserved = k.SystemReserved
	}
	if k.KubeReserved != nil {
		k8s.KubeReserved = k.KubeReserved
	}
	if k.EvictionHard != nil {
		k8s.EvictionHard = k.EvictionHard
	}
	if k.EvictionSoft != nil {
		k8s.EvictionSoft = k.EvictionSoft
	}
	if k.EvictionSoftGracePeriod != nil {
		k8s.EvictionSoftGracePeriod = map[string]string{}
		for key, d := range k.EvictionSoftGracePeriod {
			k8s.EvictionSoftGracePeriod[key] = d.Duration.String()
		}
	}
	if k.EvictionMaxPodGracePeriod != nil {
		k8s.EvictionMaxPodGracePeriod = k.EvictionMaxPodGracePeriod
	}
	if k.ImageGCHighThresholdPercent != nil {
		s := strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
		k8s.ImageGCHighThresholdPercent = &s
	}
	if k.ImageGCLowThresholdPercent != nil {
		s := strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
		k8s.ImageGCLowThresholdPercent = &s
	}
	if k.CPUCFSQuota != nil {
		k8s.CPUCFSQuotaEnforced = k.CPUCFSQuota
	}
}

// brBindCommand returns the ephemeral-storage bind command: without
// arguments from Bottlerocket 1.46.0 (and for "latest"), else with the
// directories listed.
func brBindCommand(version string) []string {
	bind := []string{"apiclient", "ephemeral-storage", "bind"}
	if bottlerocketAtLeast(version, 1, 46, 0) {
		return bind
	}
	return append(bind, "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")
}

func bottlerocketAtLeast(version string, major, minor, patch int) bool {
	version = strings.TrimPrefix(strings.TrimSpace(version), "v")
	if version == "latest" {
		return true
	}
	fields := strings.Split(version, ".")
	if len(fields) != 3 {
		return false
	}
	var v [3]int
	for i, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil {
			return false
		}
		v[i] = n
	}
	want := [3]int{major, minor, patch}
	for i := range v {
		if v[i] != want[i] {
			return v[i] > want[i]
		}
	}
	return true
}

var (
	brVPrefixedVersion = regexp.MustCompile(`v(\d+\.\d+\.\d+)`)
	brBareVersion      = regexp.MustCompile(`^(\d+\.\d+\.\d+)$`)
)

// BottlerocketVersion extracts the Bottlerocket version from an alias
// version ("latest", "v1.46.0", "1.46.0"), an AMI name term or an AMI name
// such as "bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a" (the
// v-prefixed dotted component). It returns "" when there is none.
func BottlerocketVersion(s string) string {
	s = strings.TrimSpace(s)
	if s == "latest" || strings.HasSuffix(s, "@latest") {
		return "latest"
	}
	if m := brVPrefixedVersion.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	if m := brBareVersion.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// isNonTable reports whether the key is defined as something other than a
// table. Tables that are only implied by a [a.b] header have no type.
func isNonTable(md toml.MetaData, key ...string) bool {
	typ := md.Type(key...)
	return md.IsDefined(key...) && typ != "" && typ != "Hash"
}
