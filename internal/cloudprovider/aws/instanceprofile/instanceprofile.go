package instanceprofile

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// CacheTTL is how long a profile found in the wanted shape is trusted
// before IAM is asked again.
const CacheTTL = 15 * time.Minute

// Tag keys put on owned instance profiles (besides spec.tags).
const (
	TagClusterPrefix = "kubernetes.io/cluster/"
	TagEKSCluster    = "eks:eks-cluster-name"
	TagNodeClass     = v1.Group + "/ec2nodeclass"
)

// Provider resolves, creates and deletes instance profiles. It is safe for
// concurrent use.
type Provider struct {
	iam     sdk.IAM
	region  string
	cluster string
	clock   clock.PassiveClock

	mu    sync.Mutex
	ready map[string]time.Time // profile name + "/" + role -> expiry
}

// NewProvider returns a Provider for the cluster clusterName in region.
func NewProvider(client sdk.IAM, region, clusterName string, clk clock.PassiveClock) *Provider {
	return &Provider{iam: client, region: region, cluster: clusterName, clock: clk, ready: map[string]time.Time{}}
}

// Name is the name of the profile Dovetail owns for a class that names a role.
func (p *Provider) Name(nodeClass *v1.EC2NodeClass) string {
	h := fnv.New64a()
	h.Write([]byte(p.region + "/" + nodeClass.Name + "/" + string(nodeClass.UID)))
	return p.cluster + "_" + strconv.FormatUint(h.Sum64(), 10)
}

// Path is the IAM path of the profile Dovetail owns for a class.
func (p *Provider) Path(nodeClass *v1.EC2NodeClass) string {
	return fmt.Sprintf("/karpenter/%s/%s/%s/", p.region, p.cluster, nodeClass.UID)
}

// Tags are the tags of an owned profile: spec.tags plus the ownership tags
// (which win), sorted by key.
func (p *Provider) Tags(nodeClass *v1.EC2NodeClass) []iamtypes.Tag {
	tags := map[string]string{}
	for k, v := range nodeClass.Spec.Tags {
		tags[k] = v
	}
	tags[TagClusterPrefix+p.cluster] = "owned"
	tags[TagEKSCluster] = p.cluster
	tags[TagNodeClass] = nodeClass.Name
	tags[corev1.LabelTopologyRegion] = p.region
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]iamtypes.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

// Resolve returns the instance profile the class's instances launch with:
// spec.instanceProfile once it is known to exist (NotFoundError if not), or
// the owned profile of spec.role, created and given the role when needed
// (RoleNotFoundError when the role does not exist).
func (p *Provider) Resolve(ctx context.Context, nodeClass *v1.EC2NodeClass) (string, error) {
	if name := aws.ToString(nodeClass.Spec.InstanceProfile); name != "" {
		return name, p.verify(ctx, name)
	}
	return p.Ensure(ctx, nodeClass)
}

// verify checks that an existing, user-managed profile exists.
func (p *Provider) verify(ctx context.Context, name string) error {
	if p.cached(name + "/") {
		return nil
	}
	if _, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil {
		if isNoSuchEntity(err) {
			return &NotFoundError{Name: name}
		}
		return fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	p.remember(name + "/")
	return nil
}

// checkRole returns a RoleNotFoundError when IAM has no role of that name.
func (p *Provider) checkRole(ctx context.Context, nodeClass *v1.EC2NodeClass, role string) error {
	if _, err := p.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		if isNoSuchEntity(err) {
			return &RoleNotFoundError{Role: nodeClass.Spec.Role}
		}
		return fmt.Errorf("getting role %s: %w", role, err)
	}
	return nil
}

// Ensure creates or repairs the owned profile of a class that names a role
// and returns its name. The role may be given as a name, a path or an ARN;
// only its last segment is used.
func (p *Provider) Ensure(ctx context.Context, nodeClass *v1.EC2NodeClass) (string, error) {
	name := p.Name(nodeClass)
	role := roleName(nodeClass.Spec.Role)
	if role == "" {
		return "", fmt.Errorf("spec.role: no role set")
	}
	if p.cached(name + "/" + role) {
		return name, nil
	}
	logger := log.FromContext(ctx).WithValues("EC2NodeClass", klog.KObj(nodeClass), "instanceProfile", name)
	// 1. Find or create the profile; a profile is created only for a role
	//    that exists, so a class naming a missing role leaves nothing behind.
	profile, err := p.get(ctx, name)
	if err != nil {
		return "", err
	}
	roleChecked := false
	if profile == nil {
		if err := p.checkRole(ctx, nodeClass, role); err != nil {
			return "", err
		}
		roleChecked = true
		out, err := p.iam.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{
			InstanceProfileName: aws.String(name), Path: aws.String(p.Path(nodeClass)), Tags: p.Tags(nodeClass),
		})
		switch {
		case err == nil:
			profile = out.InstanceProfile
			logger.V(1).Info("Created instance profile")
		case isAlreadyExists(err):
			if profile, err = p.get(ctx, name); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("creating instance profile %s: %w", name, err)
		}
		if profile == nil {
			return "", fmt.Errorf("instance profile %s vanished while being created", name)
		}
	} else if !hasTags(profile.Tags, p.Tags(nodeClass)) {
		// 2. A profile from an older release, or retagged by hand.
		if _, err := p.iam.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: p.Tags(nodeClass)}); err != nil {
			return "", fmt.Errorf("tagging instance profile %s: %w", name, err)
		}
	}
	// 3. Make the role the only one in it.
	attached := false
	for _, r := range profile.Roles {
		if aws.ToString(r.RoleName) == role {
			attached = true
		}
	}
	if attached && len(profile.Roles) == 1 {
		p.remember(name + "/" + role)
		return name, nil
	}
	if !roleChecked {
		if err := p.checkRole(ctx, nodeClass, role); err != nil {
			return "", err
		}
	}
	for _, r := range profile.Roles {
		other := aws.ToString(r.RoleName)
		if other == role {
			continue
		}
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: aws.String(other),
		}); err != nil && !isNoSuchEntity(err) {
			return "", fmt.Errorf("removing role %s from instance profile %s: %w", other, name, err)
		}
		logger.V(1).Info("Removed role from instance profile", "role", other)
	}
	if !attached {
		if _, err := p.iam.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: aws.String(role),
		}); err != nil {
			if isNoSuchEntity(err) {
				return "", &RoleNotFoundError{Role: nodeClass.Spec.Role}
			}
			return "", fmt.Errorf("adding role %s to instance profile %s: %w", role, name, err)
		}
		logger.V(1).Info("Added role to instance profile", "role", role)
	}
	p.remember(name + "/" + role)
	return name, nil
}

// Delete deletes the profile Dovetail owns for the class, whatever the spec
// says now: its roles are removed first, and a profile that does not exist
// is not an error.
func (p *Provider) Delete(ctx context.Context, nodeClass *v1.EC2NodeClass) error {
	name := p.Name(nodeClass)
	p.forget(name)
	profile, err := p.get(ctx, name)
	if err != nil || profile == nil {
		return err
	}
	for _, r := range profile.Roles {
		if _, err := p.iam.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{
			InstanceProfileName: aws.String(name), RoleName: r.RoleName,
		}); err != nil && !isNoSuchEntity(err) {
			return fmt.Errorf("removing role %s from instance profile %s: %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.iam.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !isNoSuchEntity(err) {
		return fmt.Errorf("deleting instance profile %s: %w", name, err)
	}
	log.FromContext(ctx).V(1).Info("Deleted instance profile", "EC2NodeClass", klog.KObj(nodeClass), "instanceProfile", name)
	return nil
}

// get returns the profile, or nil when it does not exist.
func (p *Provider) get(ctx context.Context, name string) (*iamtypes.InstanceProfile, error) {
	out, err := p.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		if isNoSuchEntity(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting instance profile %s: %w", name, err)
	}
	return out.InstanceProfile, nil
}

func (p *Provider) cached(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	exp, ok := p.ready[key]
	return ok && p.clock.Now().Before(exp)
}

func (p *Provider) remember(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	for k, exp := range p.ready {
		if !now.Before(exp) {
			delete(p.ready, k)
		}
	}
	p.ready[key] = now.Add(CacheTTL)
}

// forget drops every cached entry of a profile.
func (p *Provider) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.ready {
		if strings.HasPrefix(k, name+"/") {
			delete(p.ready, k)
		}
	}
}

// roleName strips an ARN prefix or an IAM path from a role.
func roleName(role string) string {
	if i := strings.LastIndex(role, "/"); i >= 0 {
		return role[i+1:]
	}
	return role
}

// hasTags reports whether have contains every tag of want.
func hasTags(have, want []iamtypes.Tag) bool {
	m := map[string]string{}
	for _, t := range have {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, t := range want {
		if v, ok := m[aws.ToString(t.Key)]; !ok || v != aws.ToString(t.Value) {
			return false
		}
	}
	return true
}
