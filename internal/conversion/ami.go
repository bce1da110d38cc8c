package conversion

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
)

// aliasFamily returns the amiFamily of the family part of an AMI alias
// (al2023 -> AL2023). These are the families whose v1beta1 form without
// amiSelectorTerms is an alias in v1.
func aliasFamily(family string) (string, bool) {
	switch family {
	case "al2":
		return awsv1.AMIFamilyAL2, true
	case "al2023":
		return awsv1.AMIFamilyAL2023, true
	case "bottlerocket":
		return awsv1.AMIFamilyBottlerocket, true
	case "windows2019":
		return awsv1.AMIFamilyWindows2019, true
	case "windows2022":
		return awsv1.AMIFamilyWindows2022, true
	case "windows2025":
		return awsv1.AMIFamilyWindows2025, true
	}
	return "", false
}

const (
	// aliasLatest is the alias version that needs no v1-alias-version annotation.
	aliasLatest = "latest"
	// amiPlaceholder is the term Karpenter v1.0 puts on a converted Ubuntu
	// class without terms, to pass v1 validation; the class is then unusable.
	amiPlaceholder = "ami-placeholder"
)

// v1beta1AMI is the part of a v1beta1 EC2NodeClass that amiSelection maps to.
type v1beta1AMI struct {
	AMIFamily           *string
	AMISelectorTerms    []awsv1beta1.AMISelectorTerm
	BlockDeviceMappings []*awsv1.BlockDeviceMapping
	// AliasVersion is the value of the v1-alias-version annotation, if any.
	AliasVersion *string
}

// isAliasFamily reports whether amiFamily (for instance AL2023) has an alias.
func isAliasFamily(amiFamily string) bool {
	f, ok := aliasFamily(strings.ToLower(amiFamily))
	return ok && f == amiFamily
}

// splitAlias returns the family and version of an alias such as al2023@latest.
func splitAlias(alias string) (family, version string) {
	family, version, _ = strings.Cut(alias, "@")
	return family, version
}

// amiToV1 maps a v1beta1 AMI selection to v1 (steps 1-3 of EC2NodeClassToV1).
func amiToV1(in v1beta1AMI) amiSelection {
	out := amiSelection{BlockDeviceMappings: in.BlockDeviceMappings}
	for _, t := range in.AMISelectorTerms {
		out.AMISelectorTerms = append(out.AMISelectorTerms, awsv1.AMISelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner})
	}
	family := ptr.Deref(in.AMIFamily, "")
	switch {
	case family == awsv1beta1.AMIFamilyUbuntu:
		specifiers := []string{ubuntuAMIFamily}
		out.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
		if len(out.BlockDeviceMappings) == 0 {
			specifiers = append(specifiers, ubuntuBlockDeviceMappings)
			out.BlockDeviceMappings = ubuntuBlockDevices()
		}
		if len(out.AMISelectorTerms) == 0 {
			specifiers = append(specifiers, ubuntuIncompatible)
			out.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: amiPlaceholder}}
		}
		out.Ubuntu = ptr.To(strings.Join(specifiers, ","))
	case isAliasFamily(family):
		if len(out.AMISelectorTerms) > 0 {
			out.AMIFamily = ptr.To(family)
			break
		}
		out.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@" + ptr.Deref(in.AliasVersion, aliasLatest)}}
	default:
		// Custom, or no or an unknown family (which v1beta1 validation rejects):
		// Karpenter v1.0 treats all of them as Custom.
		out.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
	}
	return out
}

// amiToV1beta1 maps a v1 AMI selection to v1beta1. An Ubuntu class is restored
// only while it still holds exactly what amiToV1 injected; terms v1beta1 cannot
// express (alias, ssmParameter) are dropped.
func amiToV1beta1(in amiSelection) v1beta1AMI {
	out := v1beta1AMI{BlockDeviceMappings: in.BlockDeviceMappings}
	for _, t := range in.AMISelectorTerms {
		if t.Alias != "" {
			if _, version := splitAlias(t.Alias); version != aliasLatest {
				out.AliasVersion = ptr.To(version)
			}
			continue
		}
		if t.SSMParameter != "" {
			continue
		}
		out.AMISelectorTerms = append(out.AMISelectorTerms, awsv1beta1.AMISelectorTerm{Tags: t.Tags, ID: t.ID, Name: t.Name, Owner: t.Owner})
	}
	if ubuntuRestorable(in) {
		specifiers := strings.Split(*in.Ubuntu, ",")
		out.AMIFamily = ptr.To(awsv1beta1.AMIFamilyUbuntu)
		if slices.Contains(specifiers, ubuntuBlockDeviceMappings) {
			out.BlockDeviceMappings = nil
		}
		if slices.Contains(specifiers, ubuntuIncompatible) {
			out.AMISelectorTerms = nil
		}
		return out
	}
	switch {
	case in.AMIFamily != nil:
		out.AMIFamily = in.AMIFamily
	case len(in.AMISelectorTerms) > 0 && in.AMISelectorTerms[0].Alias != "":
		family, _ := splitAlias(in.AMISelectorTerms[0].Alias)
		if f, ok := aliasFamily(family); ok {
			out.AMIFamily = ptr.To(f)
		}
	}
	return out
}

// ubuntuRestorable reports whether a v1 class marked by the v1beta1-ubuntu
// annotation still looks the way the conversion from Ubuntu left it: AL2, and
// the injected block device and placeholder term unchanged. Karpenter v1.0
// trusts the annotation blindly and so would drop a block device or term added
// through v1 later.
func ubuntuRestorable(in amiSelection) bool {
	if in.Ubuntu == nil || ptr.Deref(in.AMIFamily, "") != awsv1.AMIFamilyAL2 {
		return false
	}
	specifiers := strings.Split(*in.Ubuntu, ",")
	if slices.Contains(specifiers, ubuntuBlockDeviceMappings) && !equal(in.BlockDeviceMappings, ubuntuBlockDevices()) {
		return false
	}
	if slices.Contains(specifiers, ubuntuIncompatible) && !equal(in.AMISelectorTerms, []awsv1.AMISelectorTerm{{ID: amiPlaceholder}}) {
		return false
	}
	return true
}

// ubuntuBlockDevices is Ubuntu's default root volume, which AL2's defaults
// would otherwise replace: /dev/sda1, 20Gi gp3, encrypted.
func ubuntuBlockDevices() []*awsv1.BlockDeviceMapping {
	return []*awsv1.BlockDeviceMapping{{
		DeviceName: ptr.To("/dev/sda1"),
		RootVolume: true,
		EBS: &awsv1.BlockDevice{
			Encrypted:  ptr.To(true),
			VolumeType: ptr.To("gp3"),
			VolumeSize: ptr.To(resource.MustParse("20Gi")),
		},
	}}
}
