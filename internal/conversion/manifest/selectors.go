package manifest

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
)

// v1alpha1 selectors are maps whose entries are ANDed; a comma in a value is an
// OR of its parts; the special keys aws-ids / aws::ids (and, for AMIs,
// aws::name and aws::owners) are EC2 filters rather than tags. v1beta1
// selector terms are ORed, so a selector becomes one term per combination of
// values, as karpenter-convert did.
const (
	keyIDs       = "aws::ids"
	keyIDsLegacy = "aws-ids"
	keyAMIName   = "aws::name"
	keyAMIOwners = "aws::owners"
)

// maxTerms is the most selector terms the v1beta1 and v1 CRDs accept. A
// selector that expands to more is an error, caught before the expansion
// (whose size is the product of the value counts) is built.
const maxTerms = 30

// splitList splits a comma-separated selector value, trimming spaces and
// dropping empty parts.
func splitList(v string) []string {
	var out []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// combinations is how many terms a selector expands to: the product of the
// number of values of each key, capped just above maxTerms.
func combinations(counts ...int) int {
	n := 1
	for _, c := range counts {
		n *= max(c, 1)
		if n > maxTerms {
			return maxTerms + 1
		}
	}
	return n
}

// tagCounts returns the number of values of each tag.
func tagCounts(tags map[string]string) []int {
	var counts []int
	for _, v := range tags {
		counts = append(counts, len(splitList(v)))
	}
	return counts
}

// tooMany reports a selector that expands to more terms than the API accepts.
func tooMany(path *field.Path, r *legacyResult) {
	r.errs = append(r.errs, field.TooMany(path, maxTerms+1, maxTerms))
	r.errs[len(r.errs)-1].Detail = fmt.Sprintf("expands to more than %d selector terms (one per combination of comma-separated values), more than the API accepts", maxTerms)
}

// expandTags turns a tag selector whose values may be comma-separated lists
// into every single-valued combination: keys in sorted order, the first key
// varying fastest (karpenter-convert's order). Nil for no tags. Callers check
// combinations first.
func expandTags(tags map[string]string) []map[string]string {
	if len(tags) == 0 {
		return nil
	}
	combos := []map[string]string{{}}
	for _, key := range slices.Sorted(maps.Keys(tags)) {
		values := splitList(tags[key])
		if len(values) == 0 {
			values = []string{tags[key]}
		}
		next := make([]map[string]string, 0, len(combos)*len(values))
		for _, value := range values {
			for _, combo := range combos {
				c := maps.Clone(combo)
				c[key] = value
				next = append(next, c)
			}
		}
		combos = next
	}
	return combos
}

// selectorParts separates the id filter and the named filters of a selector
// from its tags.
func selectorParts(selector map[string]string, named ...string) (ids []string, filters map[string][]string, tags map[string]string) {
	filters, tags = map[string][]string{}, map[string]string{}
	for _, key := range slices.Sorted(maps.Keys(selector)) {
		value := selector[key]
		switch {
		case key == keyIDs || key == keyIDsLegacy:
			ids = append(ids, splitList(value)...)
		case slices.Contains(named, key):
			filters[key] = splitList(value)
		default:
			tags[key] = value
		}
	}
	return dedupe(ids), filters, tags
}

// dedupe drops repeated values, keeping the first of each in order.
func dedupe(values []string) []string {
	var out []string
	for _, v := range values {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// idsOnly warns that the other filters of a selector with ids are dropped:
// v1beta1 forbids an id beside other fields in a term, and the ids alone name
// the resources exactly (with the other filters v1alpha5 could only select
// fewer of them).
func idsOnly(path *field.Path, dropped []string, r *legacyResult) {
	if len(dropped) > 0 {
		slices.Sort(dropped)
		r.warnf("%s: kept only the ids; dropped %s, which v1beta1 does not allow beside an id in a term", path, strings.Join(dropped, ", "))
	}
}

func subnetTerms(selector map[string]string, path *field.Path, r *legacyResult) []awsv1.SubnetSelectorTerm {
	ids, _, tags := selectorParts(selector)
	var terms []awsv1.SubnetSelectorTerm
	if len(ids) > 0 {
		for _, id := range ids {
			terms = append(terms, awsv1.SubnetSelectorTerm{ID: id})
		}
		idsOnly(path, slices.Collect(maps.Keys(tags)), r)
		return terms
	}
	if combinations(tagCounts(tags)...) > maxTerms {
		tooMany(path, r)
		return nil
	}
	for _, t := range expandTags(tags) {
		terms = append(terms, awsv1.SubnetSelectorTerm{Tags: t})
	}
	return terms
}

func securityGroupTerms(selector map[string]string, path *field.Path, r *legacyResult) []awsv1.SecurityGroupSelectorTerm {
	ids, _, tags := selectorParts(selector)
	var terms []awsv1.SecurityGroupSelectorTerm
	if len(ids) > 0 {
		for _, id := range ids {
			terms = append(terms, awsv1.SecurityGroupSelectorTerm{ID: id})
		}
		idsOnly(path, slices.Collect(maps.Keys(tags)), r)
		return terms
	}
	if combinations(tagCounts(tags)...) > maxTerms {
		tooMany(path, r)
		return nil
	}
	for _, t := range expandTags(tags) {
		terms = append(terms, awsv1.SecurityGroupSelectorTerm{Tags: t})
	}
	return terms
}

// amiTerms converts an amiSelector: with ids, one term per id; otherwise one
// term per owner, name and tag combination, owners outermost (karpenter-convert's
// order).
func amiTerms(selector map[string]string, path *field.Path, r *legacyResult) []awsv1beta1.AMISelectorTerm {
	ids, filters, tags := selectorParts(selector, keyAMIName, keyAMIOwners)
	var terms []awsv1beta1.AMISelectorTerm
	if len(ids) > 0 {
		for _, id := range ids {
			terms = append(terms, awsv1beta1.AMISelectorTerm{ID: id})
		}
		idsOnly(path, append(slices.Collect(maps.Keys(filters)), slices.Collect(maps.Keys(tags))...), r)
		return terms
	}
	if len(selector) == 0 {
		return nil
	}
	if combinations(append(tagCounts(tags), len(filters[keyAMIOwners]), len(filters[keyAMIName]))...) > maxTerms {
		tooMany(path, r)
		return nil
	}
	owners, names, tagSets := filters[keyAMIOwners], filters[keyAMIName], expandTags(tags)
	if len(owners) == 0 {
		owners = []string{""}
	}
	if len(names) == 0 {
		names = []string{""}
	}
	if len(tagSets) == 0 {
		tagSets = []map[string]string{nil}
	}
	for _, owner := range owners {
		for _, name := range names {
			for _, t := range tagSets {
				terms = append(terms, awsv1beta1.AMISelectorTerm{Owner: owner, Name: name, Tags: t})
			}
		}
	}
	return terms
}
