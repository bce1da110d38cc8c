package userdata

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

const (
	shellContentType = `text/x-shellscript; charset="us-ascii"`
	al2Header        = "#!/bin/bash -xe\n" +
		"exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1\n"
)

// renderAL2 writes a MIME document whose last part calls
// /etc/eks/bootstrap.sh. The user's parts come first with all their headers.
func renderAL2(o Options) (string, error) {
	parts, err := userParts(o.CustomUserData, true, func(string) string { return shellContentType })
	if err != nil {
		return "", &InvalidUserDataError{Family: o.Family, Err: err}
	}
	parts = append(parts, mimePart{
		header:  [][2]string{{"Content-Type", shellContentType}},
		content: al2Script(o),
	})
	return writeMIME(parts), nil
}

func al2Script(o Options) string {
	var b strings.Builder
	b.WriteString(al2Header)
	fmt.Fprintf(&b, "/etc/eks/bootstrap.sh '%s' --apiserver-endpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " --b64-cluster-ca '%s'", o.CABundle)
	}
	var flags []string
	if o.ipv6DNS() {
		flags = append(flags, "--ip-family ipv6")
	}
	if dns := o.clusterDNS(); len(dns) > 0 {
		flags = append(flags, fmt.Sprintf("--dns-cluster-ip '%s'", dns[0]))
	}
	if o.Kubelet != nil && o.Kubelet.MaxPods != nil {
		flags = append(flags, "--use-max-pods false")
	}
	if args := kubeletExtraArgs(o); args != "" {
		flags = append(flags, fmt.Sprintf("--kubelet-extra-args '%s'", args))
	}
	if o.raid0() {
		flags = append(flags, "--local-disks raid0")
	}
	for _, f := range flags {
		b.WriteString(" \\\n")
		b.WriteString(f)
	}
	return b.String()
}

// kubeletExtraArgs returns the kubelet flags of AL2 and Windows in
// Karpenter's order, joined by spaces. Map-valued flags are sorted.
func kubeletExtraArgs(o Options) string {
	k := o.kubelet()
	var args []string
	if labels := o.nodeLabels(); len(labels) > 0 {
		args = append(args, "--node-labels="+dquote(joinSorted(labels, "=")))
	}
	if taints := o.taints(); len(taints) > 0 {
		s := make([]string, 0, len(taints))
		for i := range taints {
			s = append(s, taints[i].ToString())
		}
		args = append(args, "--register-with-taints="+dquote(strings.Join(s, ",")))
	}
	if k.MaxPods != nil {
		args = append(args, "--max-pods="+strconv.Itoa(int(*k.MaxPods)))
	}
	if k.PodsPerCore != nil {
		args = append(args, "--pods-per-core="+strconv.Itoa(int(*k.PodsPerCore)))
	}
	mapFlags := []struct {
		name string
		m    map[string]string
		sep  string
	}{
		{"--system-reserved", k.SystemReserved, "="},
		{"--kube-reserved", k.KubeReserved, "="},
		{"--eviction-hard", k.EvictionHard, "<"},
		{"--eviction-soft", k.EvictionSoft, "<"},
	}
	for _, f := range mapFlags {
		if len(f.m) > 0 {
			args = append(args, f.name+"="+dquote(joinSorted(f.m, f.sep)))
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		keys := make([]string, 0, len(k.EvictionSoftGracePeriod))
		for key := range k.EvictionSoftGracePeriod {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		s := make([]string, 0, len(keys))
		for _, key := range keys {
			s = append(s, key+"="+k.EvictionSoftGracePeriod[key].Duration.String())
		}
		args = append(args, "--eviction-soft-grace-period="+dquote(strings.Join(s, ",")))
	}
	intFlags := []struct {
		name string
		v    *int32
	}{
		{"--eviction-max-pod-grace-period", k.EvictionMaxPodGracePeriod},
		{"--image-gc-high-threshold", k.ImageGCHighThresholdPercent},
		{"--image-gc-low-threshold", k.ImageGCLowThresholdPercent},
	}
	for _, f := range intFlags {
		if f.v != nil {
			args = append(args, f.name+"="+strconv.Itoa(int(*f.v)))
		}
	}
	if k.CPUCFSQuota != nil {
		args = append(args, "--cpu-cfs-quota="+strconv.FormatBool(*k.CPUCFSQuota))
	}
	return strings.Join(args, " ")
}

// dquote wraps s in double quotes without escaping: label, taint and
// resource values cannot contain quotes.
func dquote(s string) string { return `"` + s + `"` }
