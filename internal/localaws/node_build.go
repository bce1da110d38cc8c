package localaws

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletapis "k8s.io/kubelet/pkg/apis"

	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/bootstrap"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// LabelZoneID is the zone-id label the AWS cloud controller manager sets.
const LabelZoneID = "topology.k8s.aws/zone-id"

// labelWindowsBuild is the Windows build label the kubelet sets on Windows.
const labelWindowsBuild = "node.kubernetes.io/windows-build"

// buildNode reads the instance's user data as its bootstrap would and
// returns the Node its kubelet and the cloud controller manager would make,
// or the reason the boot fails.
func (b *NodeBridge) buildNode(inst ec2.Instance) (*corev1.Node, string) {
	cfg := b.server.cfg
	family := ""
	if ami, ok := b.server.amiByID(inst.ImageID); ok {
		family = ami.Family
	}
	boot, err := bootstrap.Parse(inst.UserData, family)
	if err != nil {
		return nil, fmt.Sprintf("user data does not boot: %v", err)
	}
	if boot.ClusterName != cfg.ClusterName {
		return nil, fmt.Sprintf("user data joins cluster %q, not %q", boot.ClusterName, cfg.ClusterName)
	}
	if cfg.ClusterEndpoint != "" && boot.APIServerEndpoint != "" &&
		strings.TrimSuffix(boot.APIServerEndpoint, "/") != strings.TrimSuffix(cfg.ClusterEndpoint, "/") {
		return nil, fmt.Sprintf("user data names API server %q, not %q", boot.APIServerEndpoint, cfg.ClusterEndpoint)
	}
	catalogFamily := catalogFamilyOf(family, boot.Family)
	it, err := b.instanceType(catalogFamily, boot.MaxPods, inst.InstanceType)
	if err != nil {
		return nil, err.Error()
	}
	arch := "amd64"
	if inst.Architecture == ArchARM64 {
		arch = "arm64"
	}
	osName := "linux"
	if strings.HasPrefix(string(catalogFamily), "Windows") {
		osName = "windows"
	}
	labels := maps.Clone(boot.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	// What the kubelet sets ...
	labels[corev1.LabelHostname] = inst.PrivateDNSName
	labels[corev1.LabelArchStable] = arch
	labels[corev1.LabelOSStable] = osName
	labels[kubeletapis.LabelArch] = arch
	labels[kubeletapis.LabelOS] = osName
	if build, ok := it.Labels[labelWindowsBuild]; ok && osName == "windows" {
		labels[labelWindowsBuild] = build
	}
	// ... and what the cloud controller manager sets.
	labels[corev1.LabelInstanceTypeStable] = inst.InstanceType
	labels[corev1.LabelTopologyZone] = inst.Zone
	labels[corev1.LabelTopologyRegion] = cfg.Region
	labels[LabelZoneID] = inst.ZoneID

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        inst.PrivateDNSName,
			Labels:      labels,
			Annotations: map[string]string{controlplane.KwokNodeAnnotationKey: controlplane.KwokNodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID(inst), Taints: boot.Taints},
		Status: corev1.NodeStatus{
			Capacity:    it.Capacity.DeepCopy(),
			Allocatable: it.Allocatable.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: inst.PrivateIP},
				{Type: corev1.NodeHostName, Address: inst.PrivateDNSName},
				{Type: corev1.NodeInternalDNS, Address: inst.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				Architecture:    arch,
				OperatingSystem: osName,
				KubeletVersion:  "v" + cfg.KubernetesVersion + ".0",
				MachineID:       inst.ID,
				SystemUUID:      inst.ID,
			},
		},
	}
	return node, ""
}

// catalogFamilyOf picks the catalog's AMI family: the AMI's family when the
// image is a seeded one, else the format the bootstrap detected (Windows user
// data on an unknown image counts as Windows 2022).
func catalogFamilyOf(amiFamily, detected string) catalog.AMIFamily {
	if amiFamily != "" {
		return catalog.AMIFamily(amiFamily)
	}
	switch detected {
	case "Windows":
		return catalog.AMIFamilyWindows2022
	case "":
		return catalog.AMIFamilyCustom
	}
	return catalog.AMIFamily(detected)
}

// instanceType returns the catalog's view of an instance type under an AMI
// family and max pods, computing and caching the catalog once per pair.
func (b *NodeBridge) instanceType(family catalog.AMIFamily, maxPods *int32, name string) (catalog.InstanceType, error) {
	key := catalogKey{family: family}
	if maxPods != nil {
		key.maxPods = *maxPods
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	types, ok := b.catalogs[key]
	if !ok {
		opts := catalog.DefaultOptions()
		opts.AMIFamily = family
		opts.Region = b.server.cfg.Region
		opts.Zones = []string{opts.Region + "a", opts.Region + "b", opts.Region + "c"}
		if maxPods != nil {
			opts.Kubelet.MaxPods = maxPods
		}
		list, err := catalog.Load(opts)
		if err != nil {
			return catalog.InstanceType{}, fmt.Errorf("computing the instance types of AMI family %s: %w", family, err)
		}
		types = make(map[string]catalog.InstanceType, len(list))
		for _, it := range list {
			types[it.Name] = it
		}
		b.catalogs[key] = types
	}
	it, ok := types[name]
	if !ok {
		return catalog.InstanceType{}, fmt.Errorf("instance type %s cannot run AMI family %s", name, family)
	}
	return it, nil
}
