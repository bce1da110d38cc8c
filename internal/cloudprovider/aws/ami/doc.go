// Package ami resolves an EC2NodeClass's spec.amiSelectorTerms into the
// AMIs of status.amis, each with the requirements an instance type must meet
// to boot from it.
//
// Two kinds of terms exist. An alias (family@version, for example
// al2023@latest) names the EKS-optimized AMIs of a family: the package reads
// the public SSM parameter of every variant of the family (architecture,
// GPU/accelerator flavour, Windows build) for the cluster's Kubernetes
// version, then describes those images; each variant contributes its own
// requirements. Every other term (id, name/owner, tags, ssmParameter) turns
// into DescribeImages filters; those images only carry an architecture
// requirement (plus os/windows-build for the Windows families).
//
// Per distinct requirement set the best image is kept: a non-deprecated one
// before a deprecated one, then the newest CreationDate, then the larger
// Name. The result is sorted by CreationDate (newest first), then ID, so the
// launch code can take the first entry an instance type is compatible with.
//
// Why here and cached: the nodeclass controller refreshes status every
// minute for every class. SSM parameter values are cached for 24 hours (5
// minutes for a user's ssmParameter term, which may be repointed at any
// time) and DescribeImages answers for one minute; the Kubernetes version
// used in alias paths comes from the API server's /version.
package ami
