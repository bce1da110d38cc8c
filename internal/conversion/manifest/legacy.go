package manifest

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
	"github.com/dovetail-autoscaler/dovetail/api/legacy/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/api/legacy/v1alpha5"
)

// RolePlaceholder is the spec.role of an EC2NodeClass converted from an
// AWSNodeTemplate without an instance profile, as karpenter-convert wrote it:
// substitute the node role with envsubst or by hand.
const RolePlaceholder = "$KARPENTER_NODE_ROLE"

// legacyResult is what converting one v1alpha5/v1alpha1 object produced.
type legacyResult struct {
	warnings []string
	errs     field.ErrorList
}

func (r *legacyResult) warnf(format string, args ...any) {
	r.warnings = append(r.warnings, fmt.Sprintf(format, args...))
}

// keptMeta is the metadata karpenter-convert kept from a converted object:
// name, labels, annotations, finalizers. Server-set fields (uid,
// resourceVersion, creationTimestamp, managedFields, ...) do not belong in a
// manifest, and the status is recomputed by the controller.
func keptMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:         m.Name,
		GenerateName: m.GenerateName,
		Namespace:    m.Namespace,
		Labels:       m.Labels,
		Annotations:  m.Annotations,
		Finalizers:   m.Finalizers,
	}
}

// provisionerToNodePool converts a v1alpha5 Provisioner to a v1beta1 NodePool
// as karpenter-convert did, and its inline spec.provider, if any, to an
// EC2NodeClass named after it. Unless ignoreDefaults, the requirements the
// v1alpha5 defaulting webhook would have added are appended first.
func provisionerToNodePool(p *v1alpha5.Provisioner, ignoreDefaults bool) (*v1beta1.NodePool, *awsv1beta1.EC2NodeClass, legacyResult) {
	r := legacyResult{}
	spec := field.NewPath("spec")
	s := p.Spec
	if s.Consolidation != nil && ptr.Deref(s.Consolidation.Enabled, false) && s.TTLSecondsAfterEmpty != nil {
		r.errs = append(r.errs, field.Invalid(spec.Child("ttlSecondsAfterEmpty"), *s.TTLSecondsAfterEmpty, "cannot be combined with spec.consolidation.enabled: true"))
	}
	if s.Provider != nil && s.ProviderRef != nil {
		r.errs = append(r.errs, field.Invalid(spec.Child("provider"), "", "cannot be combined with spec.providerRef"))
	}
	for _, ttl := range []struct {
		name  string
		value *int64
	}{{"ttlSecondsAfterEmpty", s.TTLSecondsAfterEmpty}, {"ttlSecondsUntilExpired", s.TTLSecondsUntilExpired}} {
		if ttl.value != nil && *ttl.value < 0 {
			r.errs = append(r.errs, field.Invalid(spec.Child(ttl.name), *ttl.value, "must be greater than or equal to 0"))
		}
	}

	requirements := make([]v1.NodeSelectorRequirementWithMinValues, 0, len(s.Requirements)+5)
	for _, req := range s.Requirements {
		requirements = append(requirements, v1.NodeSelectorRequirementWithMinValues{Key: req.Key, Operator: req.Operator, Values: req.Values})
	}
	if !ignoreDefaults {
		requirements = append(requirements, provisionerDefaults(s.Requirements)...)
	}

	np := &v1beta1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodePool"},
		ObjectMeta: keptMeta(p.ObjectMeta),
		Spec: v1beta1.NodePoolSpec{
			Template: v1beta1.NodeClaimTemplate{
				ObjectMeta: v1.ObjectMeta{Labels: s.Labels, Annotations: s.Annotations},
				Spec: v1beta1.NodeClaimSpec{
					Taints:        s.Taints,
					StartupTaints: s.StartupTaints,
					Requirements:  requirements,
					Kubelet:       kubeletToV1beta1(s.KubeletConfiguration, spec.Child("kubeletConfiguration"), &r),
				},
			},
			Weight: s.Weight,
		},
	}
	if s.ProviderRef != nil {
		np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Kind: s.ProviderRef.Kind, Name: s.ProviderRef.Name, APIVersion: s.ProviderRef.APIVersion}
	}
	if s.Limits != nil {
		np.Spec.Limits = v1.Limits(s.Limits.Resources)
	}
	if s.TTLSecondsUntilExpired != nil {
		np.Spec.Disruption.ExpireAfter = v1.NewNillableDuration(time.Duration(*s.TTLSecondsUntilExpired) * time.Second)
	}
	switch {
	case s.Consolidation != nil && ptr.Deref(s.Consolidation.Enabled, false):
		np.Spec.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenUnderutilized
	case s.TTLSecondsAfterEmpty != nil:
		np.Spec.Disruption.ConsolidationPolicy = v1beta1.ConsolidationPolicyWhenEmpty
		np.Spec.Disruption.ConsolidateAfter = ptr.To(v1.NewNillableDuration(time.Duration(*s.TTLSecondsAfterEmpty) * time.Second))
	default:
		r.warnf("the Provisioner removed no node for being empty or under-used (no consolidation, no ttlSecondsAfterEmpty), "+
			"but the NodePool's consolidationPolicy is unset and defaults to %s: set consolidationPolicy: WhenEmpty and consolidateAfter: Never to keep the old behaviour",
			v1beta1.ConsolidationPolicyWhenUnderutilized)
	}

	if s.Provider == nil {
		return np, nil, r
	}
	provider := &v1alpha1.AWS{}
	if errs := decodeStrict(s.Provider.Raw, provider, spec.Child("provider")); len(errs) > 0 {
		r.errs = append(r.errs, errs...)
		return np, nil, r
	}
	template := &v1alpha1.AWSNodeTemplate{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: v1alpha1.AWSNodeTemplateSpec{AWS: *provider}}
	nodeClass, sub := nodeTemplateToEC2NodeClass(template, spec.Child("provider"))
	r.warnings = append(r.warnings, sub.warnings...)
	r.errs = append(r.errs, sub.errs...)
	np.Spec.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{Name: p.Name}
	r.warnf("spec.provider became EC2NodeClass %q, printed after the NodePool", p.Name)
	return np, nodeClass, r
}

// provisionerDefaults returns the requirements the v1alpha5 AWS defaulting
// webhook added, in its order: linux, amd64, on-demand, and instance
// categories c, m, r of generation > 2 unless the instance type is constrained.
func provisionerDefaults(reqs []corev1.NodeSelectorRequirement) []v1.NodeSelectorRequirementWithMinValues {
	has := map[string]bool{}
	for _, r := range reqs {
		has[normalizedLabel(r.Key)] = true
	}
	var out []v1.NodeSelectorRequirementWithMinValues
	add := func(key string, op corev1.NodeSelectorOperator, values ...string) {
		out = append(out, v1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values})
	}
	if !has[corev1.LabelOSStable] {
		add(corev1.LabelOSStable, corev1.NodeSelectorOpIn, string(corev1.Linux))
	}
	if !has[corev1.LabelArchStable] {
		add(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")
	}
	if !has[v1.CapacityTypeLabelKey] {
		add(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, v1.CapacityTypeOnDemand)
	}
	if !has[corev1.LabelInstanceTypeStable] && !has[awsv1.LabelInstanceFamily] && !has[awsv1.LabelInstanceCategory] && !has[awsv1.LabelInstanceGeneration] {
		add(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r")
		add(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "2")
	}
	return out
}

// normalizedLabel maps deprecated well-known labels to their stable names, as
// Karpenter's requirement sets did before checking for a key.
func normalizedLabel(key string) string {
	switch key {
	case corev1.LabelOSStable, "beta.kubernetes.io/os":
		return corev1.LabelOSStable
	case corev1.LabelArchStable, "beta.kubernetes.io/arch":
		return corev1.LabelArchStable
	case corev1.LabelInstanceType:
		return corev1.LabelInstanceTypeStable
	}
	return key
}

// kubeletToV1beta1 converts the v1alpha5 kubelet configuration; containerRuntime
// has no v1beta1 field (containerd is the only runtime) and is dropped.
func kubeletToV1beta1(k *v1alpha5.KubeletConfiguration, path *field.Path, r *legacyResult) *v1beta1.KubeletConfiguration {
	if k == nil {
		return nil
	}
	if k.ContainerRuntime != nil {
		r.warnf("%s is dropped: v1beta1 has no such field and containerd is the only runtime", path.Child("containerRuntime"))
	}
	return &v1beta1.KubeletConfiguration{
		ClusterDNS:                  k.ClusterDNS,
		MaxPods:                     k.MaxPods,
		PodsPerCore:                 k.PodsPerCore,
		SystemReserved:              resourceStrings(k.SystemReserved),
		KubeReserved:                resourceStrings(k.KubeReserved),
		EvictionHard:                k.EvictionHard,
		EvictionSoft:                k.EvictionSoft,
		EvictionSoftGracePeriod:     k.EvictionSoftGracePeriod,
		EvictionMaxPodGracePeriod:   k.EvictionMaxPodGracePeriod,
		ImageGCHighThresholdPercent: k.ImageGCHighThresholdPercent,
		ImageGCLowThresholdPercent:  k.ImageGCLowThresholdPercent,
		CPUCFSQuota:                 k.CPUCFSQuota,
	}
}

// resourceStrings writes quantities in canonical form ("1000m" -> "1").
func resourceStrings(l corev1.ResourceList) map[string]string {
	if l == nil {
		return nil
	}
	out := make(map[string]string, len(l))
	for name, q := range l {
		out[string(name)] = q.String()
	}
	return out
}

// nodeTemplateToEC2NodeClass converts a v1alpha1 AWSNodeTemplate (or an inline
// provider, at path) to a v1beta1 EC2NodeClass as karpenter-convert did, except
// that selector terms never combine an id with other fields (v1beta1 rejects
// that) and an instanceProfile is kept (v1beta1 accepts it, so no role needs
// filling in).
func nodeTemplateToEC2NodeClass(t *v1alpha1.AWSNodeTemplate, path *field.Path) (*awsv1beta1.EC2NodeClass, legacyResult) {
	r := legacyResult{}
	s := t.Spec
	if s.LaunchTemplateName != nil {
		r.errs = append(r.errs, field.Forbidden(path.Child("launchTemplate"), fmt.Sprintf("converting AWSNodeTemplate, cannot convert with %q: "+
			"an EC2NodeClass builds its own launch template; move the template's settings (AMI, user data, block devices, metadata options) into the AWSNodeTemplate first", path.Child("launchTemplate").String())))
		return nil, r
	}
	nc := &awsv1beta1.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: awsv1beta1.SchemeGroupVersion.String(), Kind: "EC2NodeClass"},
		ObjectMeta: keptMeta(t.ObjectMeta),
		Spec: awsv1beta1.EC2NodeClassSpec{
			AMIFamily:                  s.AMIFamily,
			SubnetSelectorTerms:        subnetTerms(s.SubnetSelector, path.Child("subnetSelector"), &r),
			SecurityGroupSelectorTerms: securityGroupTerms(s.SecurityGroupSelector, path.Child("securityGroupSelector"), &r),
			AMISelectorTerms:           amiTerms(s.AMISelector, path.Child("amiSelector"), &r),
			UserData:                   s.UserData,
			Tags:                       s.Tags,
			DetailedMonitoring:         s.DetailedMonitoring,
			Context:                    s.Context,
			InstanceProfile:            s.InstanceProfile,
		},
	}
	if nc.Spec.AMIFamily == nil {
		nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
	}
	if nc.Spec.InstanceProfile == nil {
		nc.Spec.Role = RolePlaceholder
		r.warnf("spec.role is the placeholder %s: replace it with the IAM role of the nodes (for example with envsubst)", RolePlaceholder)
	}
	if m := s.MetadataOptions; m != nil {
		nc.Spec.MetadataOptions = &awsv1beta1.MetadataOptions{
			HTTPEndpoint:            m.HTTPEndpoint,
			HTTPProtocolIPv6:        m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit,
			HTTPTokens:              m.HTTPTokens,
		}
	}
	for _, m := range s.BlockDeviceMappings {
		if m == nil {
			nc.Spec.BlockDeviceMappings = append(nc.Spec.BlockDeviceMappings, nil)
			continue
		}
		out := &awsv1.BlockDeviceMapping{DeviceName: m.DeviceName}
		if e := m.EBS; e != nil {
			out.EBS = &awsv1.BlockDevice{
				DeleteOnTermination: e.DeleteOnTermination,
				Encrypted:           e.Encrypted,
				IOPS:                e.IOPS,
				KMSKeyID:            e.KMSKeyID,
				SnapshotID:          e.SnapshotID,
				Throughput:          e.Throughput,
				VolumeSize:          e.VolumeSize,
				VolumeType:          e.VolumeType,
			}
		}
		nc.Spec.BlockDeviceMappings = append(nc.Spec.BlockDeviceMappings, out)
	}
	return nc, r
}

// machineToNodeClaim converts a v1alpha5 Machine to a v1beta1 NodeClaim.
func machineToNodeClaim(m *v1alpha5.Machine) (*v1beta1.NodeClaim, legacyResult) {
	r := legacyResult{}
	spec := field.NewPath("spec")
	nc := &v1beta1.NodeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "NodeClaim"},
		ObjectMeta: keptMeta(m.ObjectMeta),
		Spec: v1beta1.NodeClaimSpec{
			Taints:        m.Spec.Taints,
			StartupTaints: m.Spec.StartupTaints,
			Requirements:  make([]v1.NodeSelectorRequirementWithMinValues, 0, len(m.Spec.Requirements)),
			Resources:     v1beta1.ResourceRequirements{Requests: m.Spec.Resources.Requests},
			Kubelet:       kubeletToV1beta1(m.Spec.Kubelet, spec.Child("kubelet"), &r),
		},
	}
	for _, req := range m.Spec.Requirements {
		nc.Spec.Requirements = append(nc.Spec.Requirements, v1.NodeSelectorRequirementWithMinValues{Key: req.Key, Operator: req.Operator, Values: req.Values})
	}
	if ref := m.Spec.MachineTemplateRef; ref != nil {
		nc.Spec.NodeClassRef = &v1beta1.NodeClassReference{Kind: ref.Kind, Name: ref.Name, APIVersion: ref.APIVersion}
	}
	return nc, r
}
