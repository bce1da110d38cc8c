package ami

import (
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/selector"
)

// Query is one DescribeImages call: its filters and owners.
type Query struct {
	// Filters of the call; always ends with state=available.
	Filters []ec2types.Filter
	// Owners of the call; empty means any owner.
	Owners []string
}

// defaultOwners are the owners of a name term that names none, so that a
// name cannot match some stranger's public AMI.
var defaultOwners = []string{"self", "amazon"}

// Queries turns non-alias selector terms into DescribeImages calls. The id
// terms, and the ssmParameter terms through resolved (parameter name ->
// image id), share one call with an image-id filter, listed first. Every
// other term is one call: a name filter when name is set, then its tags
// (see selector.TagFilters); Owners is the term's owner, or self and amazon
// when only a name restricts it. Every call also filters state=available.
func Queries(terms []v1.AMISelectorTerm, resolved map[string]string) []Query {
	var ids []string
	var out []Query
	for _, term := range terms {
		switch {
		case term.Alias != "":
			continue
		case term.ID != "":
			ids = append(ids, term.ID)
		case term.SSMParameter != "":
			if id, ok := resolved[term.SSMParameter]; ok {
				ids = append(ids, id)
			}
		default:
			q := Query{}
			if term.Name != "" {
				q.Filters = append(q.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
			}
			q.Filters = append(q.Filters, selector.TagFilters(term.Tags)...)
			q.Filters = append(q.Filters, stateAvailable())
			switch {
			case term.Owner != "":
				q.Owners = []string{term.Owner}
			case term.Name != "":
				q.Owners = append([]string(nil), defaultOwners...)
			}
			out = append(out, q)
		}
	}
	if len(ids) > 0 {
		out = append([]Query{IDQuery(ids)}, out...)
	}
	return out
}

// IDQuery is the DescribeImages call for a list of image IDs.
func IDQuery(ids []string) Query {
	return Query{Filters: []ec2types.Filter{{Name: aws.String("image-id"), Values: ids}, stateAvailable()}}
}

func stateAvailable() ec2types.Filter {
	return ec2types.Filter{Name: aws.String("state"), Values: []string{"available"}}
}

// Candidate is an image together with one requirement set it could serve.
type Candidate struct {
	// Image as described by EC2.
	Image ec2types.Image
	// Requirements without the architecture, which Select adds from the image.
	Requirements []corev1.NodeSelectorRequirement
}

// Architectures maps EC2 image architectures to kubernetes.io/arch values.
// Images of any other architecture are never chosen.
var Architectures = map[ec2types.ArchitectureValues]string{
	ec2types.ArchitectureValuesX8664: "amd64",
	ec2types.ArchitectureValuesArm64: "arm64",
}

// Select builds status.amis from candidates: it adds each image's
// architecture to its requirements (dropping images of other
// architectures), keeps the best image per distinct requirement set
// (non-deprecated first, newest CreationDate, larger Name) and sorts the
// result by CreationDate, newest first, then ID. An image is deprecated once
// now reaches its DeprecationTime.
func Select(candidates []Candidate, now time.Time) []v1.AMI {
	type chosen struct {
		ami     v1.AMI
		created string
	}
	best := map[string]chosen{}
	for _, c := range candidates {
		arch, ok := Architectures[c.Image.Architecture]
		if !ok {
			continue
		}
		reqs := append([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}}}, c.Requirements...)
		reqs = cloneRequirements(reqs)
		SortRequirements(reqs)
		next := chosen{
			ami: v1.AMI{
				ID:           aws.ToString(c.Image.ImageId),
				Name:         aws.ToString(c.Image.Name),
				Deprecated:   deprecated(c.Image, now),
				Requirements: reqs,
			},
			created: aws.ToString(c.Image.CreationDate),
		}
		key := requirementsKey(reqs)
		if cur, ok := best[key]; !ok || better(next.ami, next.created, cur.ami, cur.created) {
			best[key] = next
		}
	}
	list := make([]chosen, 0, len(best))
	for _, c := range best {
		list = append(list, c)
	}
	sort.Slice(list, func(i, j int) bool {
		if c := compareDates(list[i].created, list[j].created); c != 0 {
			return c > 0
		}
		if list[i].ami.ID != list[j].ami.ID {
			return list[i].ami.ID < list[j].ami.ID
		}
		return requirementsKey(list[i].ami.Requirements) < requirementsKey(list[j].ami.Requirements)
	})
	out := make([]v1.AMI, 0, len(list))
	for _, c := range list {
		out = append(out, c.ami)
	}
	return out
}

// better reports whether image a beats image b for the same requirements.
func better(a v1.AMI, aCreated string, b v1.AMI, bCreated string) bool {
	if a.Deprecated != b.Deprecated {
		return !a.Deprecated
	}
	if c := compareDates(aCreated, bCreated); c != 0 {
		return c > 0
	}
	if a.Name != b.Name {
		return a.Name > b.Name
	}
	return a.ID < b.ID
}

// compareDates compares two EC2 timestamps (RFC 3339), falling back to the
// strings when either does not parse.
func compareDates(a, b string) int {
	ta, errA := time.Parse(time.RFC3339, a)
	tb, errB := time.Parse(time.RFC3339, b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return ta.Compare(tb)
}

func deprecated(image ec2types.Image, now time.Time) bool {
	if image.DeprecationTime == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339, aws.ToString(image.DeprecationTime))
	if err != nil {
		return false
	}
	return !now.Before(t)
}

func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	var b strings.Builder
	for _, r := range reqs {
		b.WriteString(r.Key)
		b.WriteByte(' ')
		b.WriteString(string(r.Operator))
		b.WriteByte(' ')
		b.WriteString(strings.Join(r.Values, ","))
		b.WriteByte(';')
	}
	return b.String()
}

func cloneRequirements(reqs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, len(reqs))
	for i, r := range reqs {
		out[i] = *r.DeepCopy()
	}
	return out
}
