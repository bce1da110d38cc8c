package ami

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/clock"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// Cache lifetimes.
const (
	// AliasParameterTTL is how long the SSM parameter of a pinned alias
	// version (al2023@v20240807) is reused: it never changes.
	AliasParameterTTL = 24 * time.Hour
	// LatestAliasParameterTTL is how long the parameter of an @latest alias
	// is reused. EKS moves it to each new release; Karpenter keeps it for 24
	// hours (dropping it early only when its image is deprecated), so a new
	// AMI can take a day to be noticed. Dovetail asks again every minute, as
	// often as it refreshes the class: a handful of GetParameter calls per
	// class per minute, well inside SSM's rate limits.
	LatestAliasParameterTTL = time.Minute
	// UserParameterTTL is how long a user's ssmParameter value is reused.
	UserParameterTTL = 5 * time.Minute
	// ImagesTTL is how long a DescribeImages answer is reused.
	ImagesTTL = time.Minute
	// versionTTL is how long the API server's version is reused.
	versionTTL = 5 * time.Minute
)

// maxResults is the page size of DescribeImages.
const maxResults = 1000

// Provider resolves amiSelectorTerms. It is safe for concurrent use.
type Provider struct {
	ec2     sdk.EC2
	ssm     sdk.SSM
	version discovery.ServerVersionInterface
	clock   clock.PassiveClock

	mu         sync.Mutex
	parameters map[string]expiring[string]
	images     map[string]expiring[[]ec2types.Image]
	k8s        expiring[string]
}

type expiring[T any] struct {
	value   T
	expires time.Time
}

// NewProvider returns a Provider that describes images through ec2client,
// reads SSM parameters through ssmClient, asks version for the cluster's
// Kubernetes version and ages its caches with clk.
func NewProvider(ec2client sdk.EC2, ssmClient sdk.SSM, version discovery.ServerVersionInterface, clk clock.PassiveClock) *Provider {
	return &Provider{
		ec2: ec2client, ssm: ssmClient, version: version, clock: clk,
		parameters: map[string]expiring[string]{},
		images:     map[string]expiring[[]ec2types.Image]{},
	}
}

// List resolves the nodeclass's amiSelectorTerms into status.amis entries.
// It fails with UnsupportedAliasError for an alias that cannot be resolved
// whatever AWS says and with NotFoundError when nothing matched; any other
// error is a failed AWS or API server call worth retrying.
func (p *Provider) List(ctx context.Context, nodeClass *v1.EC2NodeClass) ([]v1.AMI, error) {
	terms := nodeClass.Spec.AMISelectorTerms
	for i, term := range terms {
		if term.Alias != "" {
			return p.listAlias(ctx, fmt.Sprintf("spec.amiSelectorTerms[%d].alias", i), term.Alias)
		}
	}
	return p.listTerms(ctx, terms, aws.ToString(nodeClass.Spec.AMIFamily))
}

// listAlias resolves one alias term.
func (p *Provider) listAlias(ctx context.Context, field, raw string) ([]v1.AMI, error) {
	alias, err := ParseAlias(field, raw)
	if err != nil {
		return nil, err
	}
	k8s, err := p.KubernetesVersion(ctx)
	if err != nil {
		return nil, err
	}
	params, err := alias.Parameters(field, k8s)
	if err != nil {
		return nil, err
	}
	// 1. Every variant's parameter; a missing one is a variant not published.
	ids := map[string][]Parameter{}
	var order []string
	for _, param := range params {
		ttl := AliasParameterTTL
		if alias.Version == VersionLatest {
			ttl = LatestAliasParameterTTL
		}
		id, found, err := p.parameter(ctx, param.Path, ttl)
		if err != nil {
			return nil, fmt.Errorf("resolving %s %q: %w", field, raw, err)
		}
		if !found || !strings.HasPrefix(id, "ami-") {
			continue
		}
		if _, seen := ids[id]; !seen {
			order = append(order, id)
		}
		ids[id] = append(ids[id], param)
	}
	if len(order) == 0 {
		return nil, notFound("%s: failed to discover any AMIs for alias %q (Kubernetes %s)", field, raw, k8s)
	}
	// 2. The images, each with the requirement sets of every parameter naming it.
	images, err := p.describe(ctx, IDQuery(order))
	if err != nil {
		return nil, err
	}
	var candidates []Candidate
	for _, image := range images {
		for _, param := range ids[aws.ToString(image.ImageId)] {
			for _, reqs := range param.Variants {
				candidates = append(candidates, Candidate{Image: image, Requirements: reqs})
			}
		}
	}
	amis := Select(candidates, p.clock.Now())
	if len(amis) == 0 {
		return nil, notFound("%s: the images of alias %q (%s) are not available", field, raw, strings.Join(order, ", "))
	}
	return amis, nil
}

// listTerms resolves id, name/owner, tags and ssmParameter terms.
func (p *Provider) listTerms(ctx context.Context, terms []v1.AMISelectorTerm, family string) ([]v1.AMI, error) {
	// 1. ssmParameter terms name image IDs.
	resolved := map[string]string{}
	for i, term := range terms {
		if term.SSMParameter == "" || term.ID != "" {
			continue
		}
		id, found, err := p.parameter(ctx, term.SSMParameter, UserParameterTTL)
		if err != nil {
			return nil, fmt.Errorf("resolving spec.amiSelectorTerms[%d].ssmParameter %q: %w", i, term.SSMParameter, err)
		}
		if !found {
			return nil, notFound("spec.amiSelectorTerms[%d].ssmParameter: SSM parameter %q not found", i, term.SSMParameter)
		}
		if !strings.HasPrefix(id, "ami-") {
			return nil, notFound("spec.amiSelectorTerms[%d].ssmParameter: SSM parameter %q holds %q, not an AMI ID", i, term.SSMParameter, id)
		}
		resolved[term.SSMParameter] = id
	}
	// 2. One DescribeImages per query, unioned by image ID.
	seen := map[string]bool{}
	var candidates []Candidate
	extra := WindowsRequirements(family)
	for _, q := range Queries(terms, resolved) {
		images, err := p.describe(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, image := range images {
			if id := aws.ToString(image.ImageId); !seen[id] {
				seen[id] = true
				candidates = append(candidates, Candidate{Image: image, Requirements: extra})
			}
		}
	}
	amis := Select(candidates, p.clock.Now())
	if len(amis) == 0 {
		return nil, notFound("spec.amiSelectorTerms matched no available amd64 or arm64 AMI")
	}
	return amis, nil
}

// KubernetesVersion returns the API server's version as <major>.<minor>,
// with a trailing "+" removed from the minor (as some distributions add).
func (p *Provider) KubernetesVersion(_ context.Context) (string, error) {
	now := p.clock.Now()
	p.mu.Lock()
	if p.k8s.value != "" && now.Before(p.k8s.expires) {
		defer p.mu.Unlock()
		return p.k8s.value, nil
	}
	p.mu.Unlock()
	info, err := p.version.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the Kubernetes version of the API server: %w", err)
	}
	v := fmt.Sprintf("%s.%s", info.Major, strings.TrimSuffix(info.Minor, "+"))
	p.mu.Lock()
	p.k8s = expiring[string]{value: v, expires: now.Add(versionTTL)}
	p.mu.Unlock()
	return v, nil
}

// parameter reads an SSM parameter, cached for ttl; found is false when it
// does not exist. Misses are not cached.
func (p *Provider) parameter(ctx context.Context, name string, ttl time.Duration) (value string, found bool, err error) {
	now := p.clock.Now()
	p.mu.Lock()
	if e, ok := p.parameters[name]; ok && now.Before(e.expires) {
		p.mu.Unlock()
		return e.value, true, nil
	}
	p.mu.Unlock()
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		if isParameterNotFound(err) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("getting SSM parameter %s: %w", name, err)
	}
	if out.Parameter == nil {
		return "", false, nil
	}
	value = aws.ToString(out.Parameter.Value)
	p.mu.Lock()
	p.parameters[name] = expiring[string]{value: value, expires: now.Add(ttl)}
	p.mu.Unlock()
	return value, true, nil
}

func isParameterNotFound(err error) bool {
	var typed *ssmtypes.ParameterNotFound
	if errors.As(err, &typed) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "ParameterNotFound"
}

// describe runs one DescribeImages query (deprecated images included, all
// pages), cached for ImagesTTL keyed by the query.
func (p *Provider) describe(ctx context.Context, q Query) ([]ec2types.Image, error) {
	b, err := json.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("encoding image query: %w", err)
	}
	key := string(b)
	now := p.clock.Now()
	p.mu.Lock()
	if e, ok := p.images[key]; ok && now.Before(e.expires) {
		p.mu.Unlock()
		return slices.Clone(e.value), nil
	}
	p.mu.Unlock()
	in := &ec2.DescribeImagesInput{
		Filters:           q.Filters,
		Owners:            q.Owners,
		IncludeDeprecated: aws.Bool(true),
		MaxResults:        aws.Int32(maxResults),
	}
	var images []ec2types.Image
	pages := ec2.NewDescribeImagesPaginator(p.ec2, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		images = append(images, out.Images...)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, e := range p.images {
		if !now.Before(e.expires) {
			delete(p.images, k)
		}
	}
	p.images[key] = expiring[[]ec2types.Image]{value: images, expires: now.Add(ImagesTTL)}
	return slices.Clone(images), nil
}
