package v1

import "strings"

// aliasFamilies maps the lower-case family of an amiSelectorTerms alias
// (family@version) to its amiFamily value.
var aliasFamilies = map[string]string{
	"al2":          AMIFamilyAL2,
	"al2023":       AMIFamilyAL2023,
	"bottlerocket": AMIFamilyBottlerocket,
	"windows2019":  AMIFamilyWindows2019,
	"windows2022":  AMIFamilyWindows2022,
	"windows2025":  AMIFamilyWindows2025,
}

// AMIFamily returns the family the class's nodes boot: spec.amiFamily when
// set, else the family of its alias term, else Custom. The v1 API makes
// amiFamily optional when an alias names the family.
func (in *EC2NodeClass) AMIFamily() string {
	if in.Spec.AMIFamily != nil && *in.Spec.AMIFamily != "" {
		return *in.Spec.AMIFamily
	}
	if family, _, ok := in.Alias(); ok {
		if f, known := aliasFamilies[family]; known {
			return f
		}
	}
	return AMIFamilyCustom
}

// Alias returns the lower-case family and the version of the class's alias
// term (amiSelectorTerms[].alias, "family@version"), and whether it has one.
func (in *EC2NodeClass) Alias() (family, version string, ok bool) {
	for _, term := range in.Spec.AMISelectorTerms {
		if term.Alias == "" {
			continue
		}
		family, version, _ = strings.Cut(term.Alias, "@")
		return strings.ToLower(family), version, true
	}
	return "", "", false
}

// AMIFamilyOfAlias returns the amiFamily value of an alias family ("al2023"
// -> "AL2023"), and whether the family is known.
func AMIFamilyOfAlias(family string) (string, bool) {
	f, ok := aliasFamilies[strings.ToLower(family)]
	return f, ok
}
