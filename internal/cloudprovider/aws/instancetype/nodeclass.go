package instancetype

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/resource"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
)

// Settings are the controller-wide settings that change capacity.
type Settings struct {
	// Region is the topology.kubernetes.io/region label.
	Region string
	// VMMemoryOverheadPercent is --vm-memory-overhead-percent (default
	// catalog.DefaultVMMemoryOverheadPercent).
	VMMemoryOverheadPercent float64
	// ReservedENIs is --reserved-enis.
	ReservedENIs int
}

// AMIFamily returns the AMI family of an EC2NodeClass (EC2NodeClass.AMIFamily)
// as the catalog names it.
func AMIFamily(nc *awsv1.EC2NodeClass) catalog.AMIFamily {
	return catalog.AMIFamily(nc.AMIFamily())
}

// ephemeralDevice is the device whose volume holds a family's ephemeral
// storage.
func ephemeralDevice(f catalog.AMIFamily) string {
	switch f {
	case catalog.AMIFamilyBottlerocket:
		return "/dev/xvdb"
	case catalog.AMIFamilyWindows2019, catalog.AMIFamilyWindows2022, catalog.AMIFamilyWindows2025:
		return "/dev/sda1"
	}
	return "/dev/xvda"
}

// RootVolumeSize returns the size of the volume that backs ephemeral
// storage: the mapping marked rootVolume; for Custom the last
// mapping (20Gi without mappings); else the mapping of the family's ephemeral
// device. Nil means the family default, which the catalog applies (20Gi, 50Gi
// on Windows).
func RootVolumeSize(nc *awsv1.EC2NodeClass, family catalog.AMIFamily) *resource.Quantity {
	size := func(m *awsv1.BlockDeviceMapping) *resource.Quantity {
		if m == nil || m.EBS == nil || m.EBS.VolumeSize == nil {
			return nil
		}
		q := m.EBS.VolumeSize.DeepCopy()
		return &q
	}
	bdms := nc.Spec.BlockDeviceMappings
	for _, m := range bdms {
		if m != nil && m.RootVolume {
			return size(m)
		}
	}
	if family == catalog.AMIFamilyCustom {
		if len(bdms) == 0 {
			return nil
		}
		return size(bdms[len(bdms)-1])
	}
	device := ephemeralDevice(family)
	for _, m := range bdms {
		if m != nil && m.DeviceName != nil && *m.DeviceName == device {
			return size(m)
		}
	}
	return nil
}

// CatalogOptions returns the catalog options an EC2NodeClass implies: its AMI
// family, kubelet settings, root volume and instance-store policy, with the
// controller settings. It has no zones: the provider prices offerings itself.
// catalog.Compute validates it.
func CatalogOptions(nc *awsv1.EC2NodeClass, s Settings) catalog.Options {
	family := AMIFamily(nc)
	opts := catalog.Options{
		AMIFamily:               family,
		VMMemoryOverheadPercent: s.VMMemoryOverheadPercent,
		ReservedENIs:            s.ReservedENIs,
		RootVolumeSize:          RootVolumeSize(nc, family),
		Region:                  s.Region,
	}
	if p := nc.Spec.InstanceStorePolicy; p != nil {
		opts.InstanceStorePolicy = string(*p)
	}
	if k := nc.Spec.Kubelet; k != nil {
		opts.Kubelet = catalog.KubeletOptions{
			MaxPods:        k.MaxPods,
			PodsPerCore:    k.PodsPerCore,
			KubeReserved:   maps.Clone(k.KubeReserved),
			SystemReserved: maps.Clone(k.SystemReserved),
			EvictionHard:   maps.Clone(k.EvictionHard),
			EvictionSoft:   maps.Clone(k.EvictionSoft),
		}
	}
	return opts
}
