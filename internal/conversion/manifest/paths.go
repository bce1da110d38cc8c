package manifest

import (
	"strconv"
	"strings"
)

// A pathMap maps a field path of a converted object back to the field of the
// input it came from, so that an error points at what the user wrote.
type pathMap func(string) string

// rewrite replaces the first matching prefix of path (at a field boundary).
func rewrite(path string, prefixes [][2]string) string {
	for _, p := range prefixes {
		if path == p[0] || strings.HasPrefix(path, p[0]+".") || strings.HasPrefix(path, p[0]+"[") {
			return p[1] + path[len(p[0]):]
		}
	}
	return path
}

// provisionerPaths maps NodePool paths to the Provisioner's. Requirements the
// converter appended as defaults (index >= given) map to spec.requirements.
func provisionerPaths(given int, inlineProvider bool) pathMap {
	ref := "spec.providerRef"
	if inlineProvider {
		ref = "spec.provider"
	}
	return func(path string) string {
		const reqs = "spec.template.spec.requirements["
		if strings.HasPrefix(path, reqs) {
			if end := strings.IndexByte(path[len(reqs):], ']'); end >= 0 {
				if i, err := strconv.Atoi(path[len(reqs) : len(reqs)+end]); err == nil && i >= given {
					return "spec.requirements"
				}
			}
		}
		return rewrite(path, [][2]string{
			{"spec.template.metadata.labels", "spec.labels"},
			{"spec.template.metadata.annotations", "spec.annotations"},
			{"spec.template.spec.kubelet", "spec.kubeletConfiguration"},
			{"spec.template.spec.nodeClassRef", ref},
			{"spec.template.spec", "spec"},
			{"spec.template", "spec"},
			{"spec.disruption.expireAfter", "spec.ttlSecondsUntilExpired"},
			{"spec.disruption.consolidateAfter", "spec.ttlSecondsAfterEmpty"},
			{"spec.disruption.consolidationPolicy", "spec.consolidation"},
			{"spec.disruption", "spec"},
			{"spec.limits", "spec.limits.resources"},
		})
	}
}

// nodeTemplatePaths maps EC2NodeClass paths to the AWSNodeTemplate's, or to a
// Provisioner's inline provider when prefix is "spec.provider".
func nodeTemplatePaths(prefix string) pathMap {
	return func(path string) string {
		return rewrite(path, [][2]string{
			{"spec.subnetSelectorTerms", prefix + ".subnetSelector"},
			{"spec.securityGroupSelectorTerms", prefix + ".securityGroupSelector"},
			{"spec.amiSelectorTerms", prefix + ".amiSelector"},
			{"spec.role", prefix + ".instanceProfile"},
			{"spec", prefix},
		})
	}
}

// machinePaths maps NodeClaim paths to the Machine's.
func machinePaths(path string) string {
	return rewrite(path, [][2]string{{"spec.nodeClassRef", "spec.machineTemplateRef"}})
}
