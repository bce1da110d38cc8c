package ami

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// Alias is a parsed amiSelectorTerms alias, family@version.
type Alias struct {
	// Family is the AMI family (v1.AMIFamilyAL2023, ...).
	Family string
	// Version is "latest" or a pinned release in the family's format
	// (v20240625 for AL2 and AL2023, 1.20.3 for Bottlerocket with leading
	// "v"s removed).
	Version string
}

// Parameter is one SSM parameter an alias reads and the requirement sets of
// the image it names. Each set becomes its own status.amis entry (with the
// image's architecture added), so one image can appear more than once, for
// example AL2's GPU image as an nvidia and as a neuron entry.
type Parameter struct {
	// Path is the SSM parameter name.
	Path string
	// Variants are the requirement sets, without the architecture.
	Variants [][]corev1.NodeSelectorRequirement
}

// VersionLatest is the alias version that follows the newest release.
const VersionLatest = "latest"

var (
	families = map[string]string{
		"al2":          v1.AMIFamilyAL2,
		"al2023":       v1.AMIFamilyAL2023,
		"bottlerocket": v1.AMIFamilyBottlerocket,
		"windows2019":  v1.AMIFamilyWindows2019,
		"windows2022":  v1.AMIFamilyWindows2022,
		"windows2025":  v1.AMIFamilyWindows2025,
	}
	// eksVersion is the release format of the EKS-optimized Amazon Linux AMIs.
	eksVersion = regexp.MustCompile(`^v[0-9]{8}$`)
	// bottlerocketVersion is a Bottlerocket release once leading "v"s are trimmed.
	bottlerocketVersion = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	// windowsBuilds are the node.kubernetes.io/windows-build values per family.
	windowsBuilds = map[string]string{
		v1.AMIFamilyWindows2019: "10.0.17763",
		v1.AMIFamilyWindows2022: "10.0.20348",
		v1.AMIFamilyWindows2025: "10.0.26100",
	}
)

// FamilyOfAlias returns the AMI family an alias names, or "" when the alias
// is malformed or its family unknown.
func FamilyOfAlias(alias string) string {
	name, _, ok := strings.Cut(alias, "@")
	if !ok {
		return ""
	}
	return families[strings.ToLower(name)]
}

// ParseAlias parses family@version. field names the term in errors, for
// example spec.amiSelectorTerms[0].alias. Errors are UnsupportedAliasError.
func ParseAlias(field, alias string) (Alias, error) {
	name, version, ok := strings.Cut(alias, "@")
	if !ok || name == "" || version == "" {
		return Alias{}, unsupported("%s: %q is not of the form family@version", field, alias)
	}
	family, ok := families[strings.ToLower(name)]
	if !ok {
		return Alias{}, unsupported("%s: unknown AMI family %q in %q (known: al2, al2023, bottlerocket, windows2019, windows2022, windows2025)", field, name, alias)
	}
	if version == VersionLatest {
		return Alias{Family: family, Version: version}, nil
	}
	switch family {
	case v1.AMIFamilyAL2, v1.AMIFamilyAL2023:
		if !eksVersion.MatchString(version) {
			return Alias{}, unsupported("%s: version %q of %q is neither latest nor a release like v20240625", field, version, alias)
		}
	case v1.AMIFamilyBottlerocket:
		version = strings.TrimLeft(version, "v")
		if !bottlerocketVersion.MatchString(version) {
			return Alias{}, unsupported("%s: version %q of %q is neither latest nor a release like v1.20.3", field, version, alias)
		}
	default: // Windows
		return Alias{}, unsupported("%s: %q: Windows aliases only support the version latest", field, alias)
	}
	return Alias{Family: family, Version: version}, nil
}

// Parameters returns the SSM parameters the alias reads for Kubernetes
// version k8s ("1.33"), in a fixed order. field names the term in errors.
// It fails with UnsupportedAliasError where the family has no AMIs for that
// version: AL2 on 1.33 and later, Windows2025 before 1.35.
func (a Alias) Parameters(field, k8s string) ([]Parameter, error) {
	minor, err := minorOf(k8s)
	if err != nil {
		return nil, err
	}
	latest := a.Version == VersionLatest
	var out []Parameter
	switch a.Family {
	case v1.AMIFamilyAL2023:
		for _, arch := range []string{"x86_64", "arm64"} {
			for _, variant := range []string{"standard", "nvidia", "neuron"} {
				if variant == "neuron" && arch != "x86_64" {
					continue
				}
				leaf := "recommended"
				if !latest {
					leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", arch, variant, k8s, a.Version)
				}
				out = append(out, Parameter{
					Path:     fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/%s/image_id", k8s, arch, variant, leaf),
					Variants: [][]corev1.NodeSelectorRequirement{variantRequirements[variant]},
				})
			}
		}
	case v1.AMIFamilyAL2:
		if minor >= 33 {
			return nil, unsupported("%s: AL2 AMIs are not published for Kubernetes %s (1.33 and later); use al2023", field, k8s)
		}
		for _, v := range []struct{ dir, node, variants string }{
			{"amazon-linux-2", "amazon-eks-node", "standard"},
			{"amazon-linux-2-arm64", "amazon-eks-arm64-node", "standard"},
			{"amazon-linux-2-gpu", "amazon-eks-gpu-node", "nvidia,neuron"},
		} {
			leaf := "recommended"
			if !latest {
				leaf = fmt.Sprintf("%s-%s-%s", v.node, k8s, a.Version)
			}
			out = append(out, Parameter{
				Path:     fmt.Sprintf("/aws/service/eks/optimized-ami/%s/%s/%s/image_id", k8s, v.dir, leaf),
				Variants: variantsOf(v.variants),
			})
		}
	case v1.AMIFamilyBottlerocket:
		for _, v := range []struct{ flavour, arch, variants string }{
			{"", "x86_64", "standard,neuron"},
			{"", "arm64", "standard"},
			{"-nvidia", "x86_64", "nvidia"},
			{"-nvidia", "arm64", "nvidia"},
		} {
			out = append(out, Parameter{
				Path:     fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, v.flavour, v.arch, a.Version),
				Variants: variantsOf(v.variants),
			})
		}
	case v1.AMIFamilyWindows2019, v1.AMIFamilyWindows2022, v1.AMIFamilyWindows2025:
		if a.Family == v1.AMIFamilyWindows2025 && minor < 35 {
			return nil, unsupported("%s: Windows Server 2025 AMIs need Kubernetes 1.35 or later, the cluster runs %s", field, k8s)
		}
		year := strings.TrimPrefix(a.Family, "Windows")
		out = append(out, Parameter{
			Path:     fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			Variants: [][]corev1.NodeSelectorRequirement{WindowsRequirements(a.Family)},
		})
	default:
		return nil, unsupported("%s: family %q has no alias", field, a.Family)
	}
	return out, nil
}

// variantRequirements are the requirements of the GPU/accelerator variants.
var variantRequirements = map[string][]corev1.NodeSelectorRequirement{
	"standard": {
		{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	},
	"nvidia": {{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}},
	"neuron": {{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}},
}

func variantsOf(names string) [][]corev1.NodeSelectorRequirement {
	var out [][]corev1.NodeSelectorRequirement
	for _, n := range strings.Split(names, ",") {
		out = append(out, variantRequirements[n])
	}
	return out
}

// WindowsRequirements returns the os and windows-build requirements of a
// Windows family, or nil for any other family.
func WindowsRequirements(family string) []corev1.NodeSelectorRequirement {
	build, ok := windowsBuilds[family]
	if !ok {
		return nil
	}
	return []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
		{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{build}},
	}
}

// SortRequirements orders requirements by key length, then key, in place.
func SortRequirements(reqs []corev1.NodeSelectorRequirement) {
	sort.SliceStable(reqs, func(i, j int) bool {
		if len(reqs[i].Key) != len(reqs[j].Key) {
			return len(reqs[i].Key) < len(reqs[j].Key)
		}
		return reqs[i].Key < reqs[j].Key
	})
}

// minorOf returns the minor version of "1.NN".
func minorOf(k8s string) (int, error) {
	major, minor, ok := strings.Cut(k8s, ".")
	if !ok || major != "1" {
		return 0, fmt.Errorf("unexpected Kubernetes version %q", k8s)
	}
	n, err := strconv.Atoi(minor)
	if err != nil {
		return 0, fmt.Errorf("unexpected Kubernetes version %q: %w", k8s, err)
	}
	return n, nil
}
