package catalog

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// defaultWindowsPods is the pod count of Windows nodes, which have no ENI-based density.
const defaultWindowsPods = 110

// familyTraits are what an AMI family changes in the formulas of
// hack/data/ec2/README.md (Karpenter v1.14's AMI families and capacity formulas).
type familyTraits struct {
	// eniPodDensity: pods = ENI-limited pods, else 110.
	eniPodDensity bool
	// podsPerCore: kubelet podsPerCore caps pods.
	podsPerCore bool
	// evictionSoft: kubelet evictionSoft thresholds count towards overhead.
	evictionSoft bool
	// eniMemoryOverhead: kube-reserved memory counts ENI-limited pods (with
	// no reserved ENIs) rather than the pods capacity.
	eniMemoryOverhead bool
	// os is the kubernetes.io/os label.
	os string
	// windowsBuild is the node.kubernetes.io/windows-build label, if any.
	windowsBuild string
	// rootVolume is the default size of the volume backing ephemeral storage.
	rootVolume resource.Quantity
	// amd64Only: the family has images for amd64 only. Karpenter gives arm64
	// types an empty os requirement under such a family, so they can never
	// launch; the catalog leaves them out.
	amd64Only bool
}

// familyTraitsOf returns the traits of an AMI family, false if unknown.
func familyTraitsOf(f AMIFamily) (familyTraits, bool) {
	linux := familyTraits{
		eniPodDensity:     true,
		podsPerCore:       true,
		evictionSoft:      true,
		eniMemoryOverhead: true,
		os:                "linux",
		rootVolume:        resource.MustParse("20Gi"),
	}
	windows := func(build string) familyTraits {
		return familyTraits{
			podsPerCore:  true,
			evictionSoft: true,
			os:           "windows",
			windowsBuild: build,
			rootVolume:   resource.MustParse("50Gi"),
			amd64Only:    true,
		}
	}
	switch f {
	case AMIFamilyAL2023, AMIFamilyAL2, AMIFamilyCustom:
		return linux, true
	case AMIFamilyBottlerocket:
		// Bottlerocket's ephemeral storage is its 20Gi data volume (/dev/xvdb).
		br := linux
		br.podsPerCore = false
		br.evictionSoft = false
		br.eniMemoryOverhead = false
		return br, true
	case AMIFamilyWindows2019:
		return windows("10.0.17763"), true
	case AMIFamilyWindows2022:
		return windows("10.0.20348"), true
	case AMIFamilyWindows2025:
		return windows("10.0.26100"), true
	}
	return familyTraits{}, false
}

// amiFamilyNames lists the known AMI families, for error messages.
func amiFamilyNames() []string {
	return []string{
		string(AMIFamilyAL2023), string(AMIFamilyAL2), string(AMIFamilyBottlerocket),
		string(AMIFamilyWindows2019), string(AMIFamilyWindows2022), string(AMIFamilyWindows2025),
		string(AMIFamilyCustom),
	}
}
