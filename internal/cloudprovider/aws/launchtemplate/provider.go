package launchtemplate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// Tag keys that scope the templates to the cluster and the class.
const (
	tagEKSCluster = "eks:eks-cluster-name"
	tagNodeClass  = "karpenter.k8s.aws/ec2nodeclass"
)

// Timing of the template cache.
const (
	// CacheTTL is how long a template used by a launch is taken to exist
	// without asking EC2 again.
	CacheTTL = time.Minute
	// UnusedTTL is how long a cluster template may go unused before
	// DeleteUnused removes it.
	UnusedTTL = 10 * time.Minute
)

// Provider creates, finds and deletes launch templates. It is safe for
// concurrent use.
type Provider struct {
	ec2         sdk.EC2
	clock       clock.Clock
	clusterName string

	mu sync.Mutex
	// lastUsed maps template names to when a launch last used them.
	lastUsed map[string]time.Time
	// checked maps template names to when EC2 last confirmed they exist.
	checked map[string]time.Time
}

// NewProvider returns a Provider for the cluster's templates.
func NewProvider(client sdk.EC2, clk clock.Clock, clusterName string) *Provider {
	return &Provider{ec2: client, clock: clk, clusterName: clusterName, lastUsed: map[string]time.Time{}, checked: map[string]time.Time{}}
}

// Ensure makes each template exist in EC2.
func (p *Provider) Ensure(ctx context.Context, templates []Template) error {
	for _, t := range templates {
		if err := p.ensure(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

func (p *Provider) ensure(ctx context.Context, t Template) error {
	now := p.clock.Now()
	p.mu.Lock()
	p.lastUsed[t.Name] = now
	checked, ok := p.checked[t.Name]
	p.mu.Unlock()
	if ok && now.Sub(checked) < CacheTTL {
		return nil
	}
	_, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{t.Name}})
	switch {
	case err == nil:
	case awsclient.ErrorCode(err) == "InvalidLaunchTemplateName.NotFoundException":
		if err := p.create(ctx, t); err != nil {
			return err
		}
	default:
		return fmt.Errorf("describing launch template %s: %w", t.Name, err)
	}
	p.mu.Lock()
	p.checked[t.Name] = now
	p.mu.Unlock()
	return nil
}

func (p *Provider) create(ctx context.Context, t Template) error {
	var tags []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(t.Tags)) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(t.Tags[k])})
	}
	_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(t.Name),
		LaunchTemplateData: t.Data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	})
	if err != nil && awsclient.ErrorCode(err) != "InvalidLaunchTemplateName.AlreadyExistsException" {
		return fmt.Errorf("creating launch template %s: %w", t.Name, err)
	}
	log.FromContext(ctx).V(1).Info("Created launch template", "launchTemplate", t.Name, "imageID", t.ImageID)
	return nil
}

// Invalidate forgets that the named templates exist, so the next Ensure
// asks EC2 (and recreates them if they are gone).
func (p *Provider) Invalidate(names ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range names {
		delete(p.checked, n)
	}
}

// DeleteForNodeClass deletes every template of the cluster made for the
// class.
func (p *Provider) DeleteForNodeClass(ctx context.Context, nodeClassName string) error {
	templates, err := p.list(ctx, ec2types.Filter{Name: aws.String("tag:" + tagNodeClass), Values: []string{nodeClassName}})
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range templates {
		errs = append(errs, p.delete(ctx, t))
	}
	return errors.Join(errs...)
}

// DeleteUnused deletes the cluster's templates that no launch of this
// process used within UnusedTTL, counting from the first time this process
// saw them (so a restarted leader does not delete templates in use by
// launches it has not made yet).
func (p *Provider) DeleteUnused(ctx context.Context) error {
	templates, err := p.list(ctx)
	if err != nil {
		return err
	}
	now := p.clock.Now()
	var errs []error
	for _, t := range templates {
		p.mu.Lock()
		used, ok := p.lastUsed[t]
		if !ok {
			p.lastUsed[t] = now
			used = now
		}
		p.mu.Unlock()
		if now.Sub(used) >= UnusedTTL {
			errs = append(errs, p.delete(ctx, t))
		}
	}
	return errors.Join(errs...)
}

// list returns the names of the cluster's templates matching the filters.
func (p *Provider) list(ctx context.Context, filters ...ec2types.Filter) ([]string, error) {
	in := &ec2.DescribeLaunchTemplatesInput{
		Filters:    append([]ec2types.Filter{{Name: aws.String("tag:" + tagEKSCluster), Values: []string{p.clusterName}}}, filters...),
		MaxResults: aws.Int32(200),
	}
	var names []string
	pager := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, in)
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing launch templates: %w", err)
		}
		for _, t := range page.LaunchTemplates {
			names = append(names, aws.ToString(t.LaunchTemplateName))
		}
	}
	return names, nil
}

func (p *Provider) delete(ctx context.Context, name string) error {
	_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
	if err != nil && awsclient.ErrorCode(err) != "InvalidLaunchTemplateName.NotFoundException" {
		return fmt.Errorf("deleting launch template %s: %w", name, err)
	}
	p.mu.Lock()
	delete(p.lastUsed, name)
	delete(p.checked, name)
	p.mu.Unlock()
	log.FromContext(ctx).V(1).Info("Deleted launch template", "launchTemplate", name)
	return nil
}
