package localaws

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
)

// AMI families of the seeded EKS-optimized images; the values are
// EC2NodeClass spec.amiFamily names, which bootstrap.Parse also takes.
const (
	FamilyAL2023       = "AL2023"
	FamilyAL2          = "AL2"
	FamilyBottlerocket = "Bottlerocket"
	FamilyWindows2022  = "Windows2022"
)

// Variants of the EKS-optimized images.
const (
	VariantStandard = "standard"
	VariantNvidia   = "nvidia"
	VariantNeuron   = "neuron"
	// VariantGPU is AL2's amazon-linux-2-gpu image (NVIDIA and Neuron).
	VariantGPU = "gpu"
)

// Architectures as EC2 names them.
const (
	ArchX86_64 = "x86_64"
	ArchARM64  = "arm64"
)

// amazonEKSAccount owns Amazon's EKS-optimized Linux AMIs (owner alias
// "amazon"); amazonWindowsAccount owns Amazon's Windows AMIs.
const (
	amazonEKSAccount     = "602401143452"
	amazonWindowsAccount = "801119661308"
)

// AMI is one published EKS-optimized image and the SSM parameters naming it.
type AMI struct {
	// Family is FamilyAL2023, FamilyAL2, FamilyBottlerocket or FamilyWindows2022.
	Family string
	// Variant is VariantStandard, VariantNvidia, VariantNeuron or VariantGPU.
	Variant string
	// Arch is ArchX86_64 or ArchARM64.
	Arch string
	// Version is the release, e.g. v20261101 (AL2, AL2023), 1.50.0
	// (Bottlerocket) or 2026.11.12 (Windows).
	Version string
	// Image is the AMI as EC2 has it.
	Image ec2.Image
	// AliasParameter is the image line's recommended/latest parameter; it names
	// this image while the image is the line's newest.
	AliasParameter string
	// VersionParameter is the versioned parameter naming this image; empty
	// for Windows, which has none.
	VersionParameter string
}

// amiLine is one sequence of images EKS publishes under one alias parameter.
type amiLine struct{ family, variant, arch string }

// seededLines are the image lines of the seeded account.
var seededLines = []amiLine{
	{FamilyAL2023, VariantStandard, ArchX86_64}, {FamilyAL2023, VariantStandard, ArchARM64},
	{FamilyAL2023, VariantNvidia, ArchX86_64}, {FamilyAL2023, VariantNvidia, ArchARM64},
	{FamilyAL2023, VariantNeuron, ArchX86_64},
	{FamilyAL2, VariantStandard, ArchX86_64}, {FamilyAL2, VariantStandard, ArchARM64}, {FamilyAL2, VariantGPU, ArchX86_64},
	{FamilyBottlerocket, VariantStandard, ArchX86_64}, {FamilyBottlerocket, VariantStandard, ArchARM64},
	{FamilyBottlerocket, VariantNvidia, ArchX86_64}, {FamilyBottlerocket, VariantNvidia, ArchARM64},
	{FamilyWindows2022, VariantStandard, ArchX86_64},
}

// seededVersions are the two releases seeded per family, older first.
var seededVersions = map[string][2]string{
	FamilyAL2023:       {"v20261001", "v20261101"},
	FamilyAL2:          {"v20261001", "v20261101"},
	FamilyBottlerocket: {"1.49.0", "1.50.0"},
	FamilyWindows2022:  {"2026.10.15", "2026.11.12"},
}

// al2Dir is the amazon-linux-2 parameter directory of an AL2 variant.
func (l amiLine) al2Dir() string {
	switch {
	case l.variant == VariantGPU:
		return "amazon-linux-2-gpu"
	case l.arch == ArchARM64:
		return "amazon-linux-2-arm64"
	}
	return "amazon-linux-2"
}

// bottlerocketVariant is aws-k8s-<k> or aws-k8s-<k>-nvidia.
func (l amiLine) bottlerocketVariant(k string) string {
	if l.variant == VariantNvidia {
		return "aws-k8s-" + k + "-nvidia"
	}
	return "aws-k8s-" + k
}

// imageName is the AMI name EKS gives a release of the line.
func (l amiLine) imageName(k, version string) string {
	switch l.family {
	case FamilyAL2023:
		return fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", l.arch, l.variant, k, version)
	case FamilyAL2:
		switch l.al2Dir() {
		case "amazon-linux-2-gpu":
			return fmt.Sprintf("amazon-eks-gpu-node-%s-%s", k, version)
		case "amazon-linux-2-arm64":
			return fmt.Sprintf("amazon-eks-arm64-node-%s-%s", k, version)
		}
		return fmt.Sprintf("amazon-eks-node-%s-%s", k, version)
	case FamilyBottlerocket:
		h := fnv.New32a()
		_, _ = h.Write([]byte(l.bottlerocketVariant(k) + "/" + l.arch + "/" + version))
		return fmt.Sprintf("bottlerocket-%s-%s-v%s-%08x", l.bottlerocketVariant(k), l.arch, strings.TrimLeft(version, "v"), h.Sum32())
	}
	return fmt.Sprintf("Windows_Server-2022-English-Core-EKS_Optimized-%s-%s", k, version)
}

// aliasParameter is the line's recommended/latest parameter
// (the public parameter paths EKS documents for its optimized AMIs).
func (l amiLine) aliasParameter(k string) string {
	switch l.family {
	case FamilyAL2023:
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", k, l.arch, l.variant)
	case FamilyAL2:
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/recommended/image_id", k, l.al2Dir())
	case FamilyBottlerocket:
		return fmt.Sprintf("/aws/service/bottlerocket/%s/%s/latest/image_id", l.bottlerocketVariant(k), l.arch)
	}
	return fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-%s/image_id", k)
}

// versionParameter is the parameter naming one release; "" for Windows.
func (l amiLine) versionParameter(k, version string) string {
	switch l.family {
	case FamilyAL2023:
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k, l.arch, l.variant, l.imageName(k, version))
	case FamilyAL2:
		return fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k, l.al2Dir(), l.imageName(k, version))
	case FamilyBottlerocket:
		return fmt.Sprintf("/aws/service/bottlerocket/%s/%s/%s/image_id", l.bottlerocketVariant(k), l.arch, strings.TrimLeft(version, "v"))
	}
	return ""
}

// description is the AMI description, in the style of EKS's.
func (l amiLine) description(k string) string {
	switch l.family {
	case FamilyAL2023:
		return fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, variant: %s, arch: %s)", k, l.variant, l.arch)
	case FamilyAL2:
		return fmt.Sprintf("EKS Kubernetes Worker AMI with AmazonLinux2 image, (k8s: %s, arch: %s)", k, l.arch)
	case FamilyBottlerocket:
		return fmt.Sprintf("Bottlerocket %s %s", l.bottlerocketVariant(k), l.arch)
	}
	return fmt.Sprintf("Microsoft Windows Server 2022 Core optimized for EKS and Kubernetes %s", k)
}

// publish registers one release of the line with EC2 and points its SSM
// parameters at it: the versioned one, and the alias when it is the newest.
func (s *Server) publish(l amiLine, version string, created time.Time, moveAlias bool) (AMI, error) {
	k := s.cfg.KubernetesVersion
	owner := amazonEKSAccount
	if l.family == FamilyWindows2022 {
		owner = amazonWindowsAccount
	}
	img := ec2.Image{Name: l.imageName(k, version), Description: l.description(k), Architecture: l.arch,
		CreationDate: created, OwnerID: owner, OwnerAlias: "amazon", Public: true}
	var err error
	if created.IsZero() {
		img, err = s.ec2.PublishImage(img)
	} else {
		img, err = s.ec2.AddImage(img)
	}
	if err != nil {
		return AMI{}, fmt.Errorf("publishing %s %s %s %s: %w", l.family, l.variant, l.arch, version, err)
	}
	ami := AMI{Family: l.family, Variant: l.variant, Arch: l.arch, Version: version, Image: img,
		AliasParameter: l.aliasParameter(k), VersionParameter: l.versionParameter(k, version)}
	if ami.VersionParameter != "" {
		s.ssm.PutParameter(ami.VersionParameter, img.ID)
	}
	if moveAlias {
		s.ssm.PutParameter(ami.AliasParameter, img.ID)
	}
	s.mu.Lock()
	s.amis = append(s.amis, ami)
	s.mu.Unlock()
	return ami, nil
}

// seedAMIs publishes two releases of every line, 60 and 30 days old, the
// newer one under the alias parameter.
func (s *Server) seedAMIs() error {
	now := s.cfg.Clock.Now()
	for _, l := range seededLines {
		versions := seededVersions[l.family]
		for i, v := range versions {
			created := now.Add(-time.Duration(60-30*i) * 24 * time.Hour).UTC().Truncate(time.Second)
			if _, err := s.publish(l, v, created, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// PublishAMI publishes a new release of an image line at run time, created
// now by the endpoint's clock, and moves the line's recommended/latest
// parameter to it, as EKS does on a release (for drift tests). family,
// variant and arch name a seeded line (see AMIs); version must be new.
func (s *Server) PublishAMI(family, variant, arch, version string) (AMI, error) {
	i := slices.IndexFunc(seededLines, func(l amiLine) bool {
		return l.family == family && l.variant == variant && l.arch == arch
	})
	if i < 0 {
		return AMI{}, fmt.Errorf("publishing AMI: no image line %s/%s/%s", family, variant, arch)
	}
	s.mu.Lock()
	exists := slices.ContainsFunc(s.amis, func(a AMI) bool {
		return a.Family == family && a.Variant == variant && a.Arch == arch && a.Version == version
	})
	s.mu.Unlock()
	if exists {
		return AMI{}, fmt.Errorf("publishing AMI %s/%s/%s: version %s already exists", family, variant, arch, version)
	}
	return s.publish(seededLines[i], version, time.Time{}, true)
}

// AMIs returns every published EKS-optimized image, seeded ones first, in
// publication order.
func (s *Server) AMIs() []AMI {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.amis)
}

// LatestAMI returns the newest release of an image line: the image its
// alias parameter names.
func (s *Server) LatestAMI(family, variant, arch string) (AMI, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.amis) - 1; i >= 0; i-- {
		if a := s.amis[i]; a.Family == family && a.Variant == variant && a.Arch == arch {
			return a, true
		}
	}
	return AMI{}, false
}

// amiByID returns the published image with the given id.
func (s *Server) amiByID(id string) (AMI, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.amis, func(a AMI) bool { return a.Image.ID == id })
	if i < 0 {
		return AMI{}, false
	}
	return s.amis[i], true
}
