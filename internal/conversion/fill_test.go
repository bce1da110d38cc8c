package conversion

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// fillFuncs are the randfill functions that make the round-trip fuzzers
// produce only objects the CRDs would accept: parseable durations, enum
// values, selector terms that obey the exclusivity rules, and the
// compatibility annotations only in the form a conversion writes them. A
// value the API rejects needs no round trip, and random text in a duration
// would only test the parser.
func fillFuncs() []any {
	return []any{
		func(*metav1.TypeMeta, randfill.Continue) {}, // set by the test to the object's kind
		fillObjectMeta,
		func(t *metav1.Time, c randfill.Continue) { *t = fillTime(c) },
		func(d *metav1.Duration, c randfill.Continue) { *d = fillDuration(c) },
		func(d *v1.NillableDuration, c randfill.Continue) { *d = fillNillableDuration(c) },
		func(q *resource.Quantity, c randfill.Continue) { *q = fillQuantity(c) },
		func(l *corev1.ResourceList, c randfill.Continue) { *l = fillResourceList(c) },
		func(l *v1.Limits, c randfill.Continue) { *l = v1.Limits(fillResourceList(c)) },
		fillTaint,
		fillCondition,
		fillRequirement,
		func(m *v1.ObjectMeta, c randfill.Continue) {
			*m = v1.ObjectMeta{Labels: fillStringMap(c, "team"), Annotations: fillStringMap(c, "example.com/owner")}
		},

		// karpenter.sh v1
		fillV1NodePool,
		fillV1NodePoolSpec,
		fillV1Disruption,
		fillV1Budget,
		fillV1NodeClassRef,
		fillV1NodeClaim,
		func(s *v1.NodeClaimStatus, c randfill.Continue) {
			c.FillNoCustom(s)
		},

		// karpenter.sh v1beta1
		fillV1beta1NodePoolSpec,
		fillV1beta1Disruption,
		fillV1beta1Budget,
		fillV1beta1NodeClassRef,
		fillV1beta1Kubelet,
		fillV1beta1NodeClaim,

		// karpenter.k8s.aws v1 and v1beta1
		fillV1EC2NodeClass,
		fillV1EC2NodeClassSpec,
		fillV1beta1EC2NodeClass,
		fillV1beta1EC2NodeClassSpec,
		fillAWSKubelet,
		fillSubnetTerm,
		fillSecurityGroupTerm,
		fillCapacityReservationTerm,
		fillBlockDeviceMapping,
		fillV1MetadataOptions,
		fillV1beta1MetadataOptions,
		fillAMI,
		func(s *awsv1.Subnet, c randfill.Continue) {
			*s = awsv1.Subnet{ID: "subnet-" + word(c), Zone: pick(c, "us-west-2a", "us-west-2b"), ZoneID: pick(c, "", "usw2-az1")}
		},
		func(s *awsv1.SecurityGroup, c randfill.Continue) {
			*s = awsv1.SecurityGroup{ID: "sg-" + word(c), Name: pick(c, "", "default")}
		},
	}
}

// newFiller returns a randfill.Filler that uses fillFuncs.
func newFiller(f *randfill.Filler) *randfill.Filler {
	return f.NilChance(0.3).NumElements(0, 3).Funcs(fillFuncs()...)
}

// testNodePools is the NodePool lookup of the NodeClaim fuzzers: two pools,
// and every other name missing.
func testNodePools() StaticNodePools {
	return StaticNodePools{
		"np-a": {Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{ExpireAfter: v1.MustParseNillableDuration("24h")}}}},
		"np-b": {Spec: v1.NodePoolSpec{Template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{ExpireAfter: v1.MustParseNillableDuration("Never")}}}},
	}
}

func pick[T any](c randfill.Continue, values ...T) T { return values[c.Intn(len(values))] }

// chance reports true with probability 1/n.
func chance(c randfill.Continue, n int) bool { return c.Intn(n) == 0 }

func word(c randfill.Continue) string {
	const letters = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 1+c.Intn(8))
	for i := range b {
		b[i] = letters[c.Intn(len(letters))]
	}
	return string(b)
}

func fillStringMap(c randfill.Continue, keys ...string) map[string]string {
	n := c.Intn(4)
	if n == 0 {
		return nil
	}
	m := map[string]string{}
	for range n {
		key := pick(c, append(keys, "example.com/"+word(c))...)
		m[key] = word(c)
	}
	return m
}

func fillTime(c randfill.Continue) metav1.Time {
	// Second precision in UTC: what survives JSON, which is how the API and the
	// v1-fields annotation carry times.
	return metav1.NewTime(time.Unix(1_600_000_000+c.Int63n(200_000_000), 0).UTC())
}

func fillDuration(c randfill.Continue) metav1.Duration {
	// Hours and minutes only, as the budget duration pattern requires.
	return metav1.Duration{Duration: time.Duration(c.Intn(48))*time.Hour + time.Duration(c.Intn(60))*time.Minute}
}

// fillNillableDuration covers spellings the NillableDuration pattern accepts,
// including ones equal in value but not in text ("0s" and "0m").
func fillNillableDuration(c randfill.Continue) v1.NillableDuration {
	return v1.MustParseNillableDuration(pick(c, "Never", "0s", "0m", "30s", "1m", "10m", "1h30m", "24h", "720h", "720h0m0s", "168h"))
}

func fillQuantity(c randfill.Continue) resource.Quantity {
	return resource.MustParse(pick(c, "1", "100m", "1000", "4Gi", "100Mi", "20Gi", "1k", "250"))
}

func fillResourceList(c randfill.Continue) corev1.ResourceList {
	n := c.Intn(4)
	if n == 0 {
		return nil
	}
	l := corev1.ResourceList{}
	for range n {
		l[pick(c, corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage, "nodes")] = fillQuantity(c)
	}
	return l
}

func fillObjectMeta(m *metav1.ObjectMeta, c randfill.Continue) {
	*m = metav1.ObjectMeta{
		Name:            word(c),
		UID:             types.UID(word(c)),
		ResourceVersion: fmt.Sprint(c.Intn(100000)),
		Generation:      int64(c.Intn(10)),
		Labels:          fillStringMap(c, v1.NodePoolLabelKey, "team"),
		Annotations:     fillStringMap(c, "kubernetes.io/description", v1.StoredVersionMigratedAnnotationKey),
	}
	if chance(c, 2) {
		m.CreationTimestamp = fillTime(c)
	}
	if chance(c, 4) {
		m.Finalizers = []string{v1.TerminationFinalizer}
	}
}

func fillTaint(t *corev1.Taint, c randfill.Continue) {
	*t = corev1.Taint{
		Key:    pick(c, "example.com/special-taint", "dedicated", "nvidia.com/gpu"),
		Value:  pick(c, "", word(c)),
		Effect: pick(c, corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute),
	}
}

func fillCondition(cond *metav1.Condition, c randfill.Continue) {
	*cond = metav1.Condition{
		Type:               pick(c, "Ready", "Launched", "Registered", "Initialized", "Drifted", "NodeClassReady"),
		Status:             pick(c, metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown),
		ObservedGeneration: int64(c.Intn(5)),
		LastTransitionTime: fillTime(c),
		Reason:             pick(c, "Ready", "NotReady", "RequirementsDrifted"),
		Message:            pick(c, "", "waiting"),
	}
}

func fillRequirement(r *v1.NodeSelectorRequirementWithMinValues, c randfill.Continue) {
	r.Key = pick(c, "karpenter.k8s.aws/instance-category", "kubernetes.io/arch", v1.CapacityTypeLabelKey,
		"topology.kubernetes.io/zone", "karpenter.k8s.aws/instance-cpu", "example.com/team")
	r.Operator = pick(c, corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
		corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, v1.NodeSelectorOpGte, v1.NodeSelectorOpLte)
	r.Values, r.MinValues = nil, nil
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		for range 1 + c.Intn(3) {
			r.Values = append(r.Values, word(c))
		}
		if r.Operator == corev1.NodeSelectorOpIn && chance(c, 3) {
			r.MinValues = ptr.To(1 + c.Intn(len(r.Values)))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
	default:
		r.Values = []string{fmt.Sprint(c.Intn(64))}
	}
}

// karpenter.sh v1.

func fillV1NodePool(np *v1.NodePool, c randfill.Continue) {
	c.FillNoCustom(np)
	np.Status.Nodes = nil
	if chance(c, 2) {
		np.Status.Nodes = ptr.To(int64(c.Intn(100)))
	}
	addV1Artifacts(&np.ObjectMeta, np.Spec.Template.Spec.NodeClassRef, c)
}

// addV1Artifacts gives a v1 object the compatibility annotations a v1beta1 ->
// v1 conversion writes, in the form it writes them: a kubelet block, and a
// v1beta1 reference that names the same NodeClass in another spelling.
func addV1Artifacts(m *metav1.ObjectMeta, ref *v1.NodeClassReference, c randfill.Continue) {
	if chance(c, 3) {
		kubelet := &v1beta1.KubeletConfiguration{}
		fillV1beta1Kubelet(kubelet, c)
		raw, err := json.Marshal(kubelet)
		if err != nil {
			panic(err)
		}
		m.Annotations = setAnnotation(m.Annotations, v1.KubeletCompatibilityAnnotationKey, string(raw))
	}
	// A v1beta1 -> v1 conversion never writes a versioned group, so a
	// reference with one never carries this annotation.
	if ref != nil && !strings.Contains(ref.Group, "/") && chance(c, 3) {
		spelled := v1beta1.NodeClassReference{Name: ref.Name, Kind: ref.Kind, APIVersion: ref.Group + "/v1beta2"}
		if ref.Group == awsv1.Group && ref.Kind == "EC2NodeClass" {
			spelled = pick(c, v1beta1.NodeClassReference{Name: ref.Name}, v1beta1.NodeClassReference{Name: ref.Name, Kind: ref.Kind})
		}
		raw, err := json.Marshal(spelled)
		if err != nil {
			panic(err)
		}
		m.Annotations = setAnnotation(m.Annotations, v1.NodeClassReferenceAnnotationKey, string(raw))
	}
}

func setAnnotation(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

func fillV1NodePoolSpec(s *v1.NodePoolSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	s.Weight = nil
	if chance(c, 2) {
		s.Weight = ptr.To(int32(1 + c.Intn(100)))
	}
	s.Template.Spec.NodeClassRef = &v1.NodeClassReference{}
	fillV1NodeClassRef(s.Template.Spec.NodeClassRef, c)
	// A static pool (replicas set) has no weight and limits only nodes, as
	// admission requires; replicas 0 is kept apart from unset.
	s.Replicas = nil
	if chance(c, 3) {
		s.Replicas = ptr.To(int64(c.Intn(20)))
		s.Weight = nil
		for name := range s.Limits {
			if name != "nodes" {
				delete(s.Limits, name)
			}
		}
	}
}

func fillV1Disruption(d *v1.Disruption, c randfill.Continue) {
	d.ConsolidationPolicy = pick(c, v1.ConsolidationPolicy(""), v1.ConsolidationPolicyWhenEmpty,
		v1.ConsolidationPolicyWhenEmptyOrUnderutilized, v1.ConsolidationPolicyWhenUnderutilized, v1.ConsolidationPolicyBalanced)
	d.ConsolidationThreshold = nil
	if d.ConsolidationPolicy == v1.ConsolidationPolicyBalanced && chance(c, 2) {
		d.ConsolidationThreshold = ptr.To(int32(1 + c.Intn(3)))
	}
	d.ConsolidateAfter = fillNillableDuration(c)
	d.Budgets = nil
	for range c.Intn(3) {
		b := v1.Budget{}
		fillV1Budget(&b, c)
		d.Budgets = append(d.Budgets, b)
	}
}

func fillV1Budget(b *v1.Budget, c randfill.Continue) {
	*b = v1.Budget{Nodes: pick(c, intstr.FromString("10%"), intstr.FromString("0"), intstr.FromInt32(5), intstr.FromString("100%"))}
	if chance(c, 2) {
		b.Schedule = ptr.To(pick(c, "0 10 * * mon-fri", "@daily"))
		b.Duration = &metav1.Duration{}
		*b.Duration = fillDuration(c)
	}
	for _, r := range []v1.DisruptionReason{v1.DisruptionReasonUnderutilized, v1.DisruptionReasonEmpty, v1.DisruptionReasonDrifted, v1.DisruptionReasonExpired} {
		if chance(c, 3) {
			b.Reasons = append(b.Reasons, r)
		}
	}
}

func fillV1NodeClassRef(r *v1.NodeClassReference, c randfill.Continue) {
	*r = pick(c,
		v1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass"},
		v1.NodeClassReference{Group: awsv1.Group + "/v1", Kind: "EC2NodeClass"},
		v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass"},
		v1.NodeClassReference{Group: "example.com", Kind: "ExampleNodeClass"})
	r.Name = word(c)
}

func fillV1NodeClaim(nc *v1.NodeClaim, c randfill.Continue) {
	c.FillNoCustom(nc)
	nc.Spec.NodeClassRef = &v1.NodeClassReference{}
	fillV1NodeClassRef(nc.Spec.NodeClassRef, c)
	nc.Labels = withNodePoolLabel(nc.Labels, c)
	addV1Artifacts(&nc.ObjectMeta, nc.Spec.NodeClassRef, c)
}

// withNodePoolLabel names one of testNodePools, a missing NodePool, or none.
func withNodePoolLabel(labels map[string]string, c randfill.Continue) map[string]string {
	delete(labels, v1.NodePoolLabelKey)
	if name := pick(c, "", "np-a", "np-b", "np-missing"); name != "" {
		labels = setAnnotation(labels, v1.NodePoolLabelKey, name)
	}
	return labels
}

// karpenter.sh v1beta1.

func fillV1beta1NodePoolSpec(s *v1beta1.NodePoolSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	s.Weight = nil
	if chance(c, 2) {
		s.Weight = ptr.To(int32(1 + c.Intn(100)))
	}
	// The v1beta1 CRD forbids resources in a NodePool template.
	s.Template.Spec.Resources = v1beta1.ResourceRequirements{}
	s.Template.Spec.NodeClassRef = &v1beta1.NodeClassReference{}
	fillV1beta1NodeClassRef(s.Template.Spec.NodeClassRef, c)
	s.Disruption.ExpireAfter = fillNillableDuration(c)
}

// fillV1beta1Disruption obeys the v1beta1 CEL rules: WhenEmpty needs
// consolidateAfter; WhenUnderutilized (also the unset policy, its default)
// allows only Never.
func fillV1beta1Disruption(d *v1beta1.Disruption, c randfill.Continue) {
	d.ConsolidationPolicy = pick(c, v1beta1.ConsolidationPolicy(""), v1beta1.ConsolidationPolicyWhenEmpty, v1beta1.ConsolidationPolicyWhenUnderutilized)
	after := fillNillableDuration(c)
	switch {
	case d.ConsolidationPolicy == v1beta1.ConsolidationPolicyWhenEmpty:
		d.ConsolidateAfter = &after
	case chance(c, 2):
		d.ConsolidateAfter = ptr.To(v1.MustParseNillableDuration("Never"))
	default:
		d.ConsolidateAfter = nil
	}
	d.ExpireAfter = fillNillableDuration(c)
	d.Budgets = nil
	for range c.Intn(3) {
		b := v1beta1.Budget{}
		fillV1beta1Budget(&b, c)
		d.Budgets = append(d.Budgets, b)
	}
}

func fillV1beta1Budget(b *v1beta1.Budget, c randfill.Continue) {
	v1b := v1.Budget{}
	fillV1Budget(&v1b, c)
	*b = v1beta1.Budget{Nodes: v1b.Nodes, Schedule: v1b.Schedule, Duration: v1b.Duration}
}

func fillV1beta1NodeClassRef(r *v1beta1.NodeClassReference, c randfill.Continue) {
	*r = pick(c,
		v1beta1.NodeClassReference{},
		v1beta1.NodeClassReference{Kind: "EC2NodeClass"},
		v1beta1.NodeClassReference{Kind: "EC2NodeClass", APIVersion: "karpenter.k8s.aws/v1beta1"},
		v1beta1.NodeClassReference{Kind: "EC2NodeClass", APIVersion: "karpenter.k8s.aws/v1"},
		v1beta1.NodeClassReference{Kind: "KWOKNodeClass", APIVersion: "karpenter.kwok.sh/v1alpha1"},
		v1beta1.NodeClassReference{Kind: "ExampleNodeClass", APIVersion: "example.com/v2"})
	r.Name = word(c)
}

func fillV1beta1Kubelet(k *v1beta1.KubeletConfiguration, c randfill.Continue) {
	a := awsv1.KubeletConfiguration{}
	fillAWSKubelet(&a, c)
	*k = v1beta1.KubeletConfiguration(a)
}

func fillV1beta1NodeClaim(nc *v1beta1.NodeClaim, c randfill.Continue) {
	c.FillNoCustom(nc)
	nc.Spec.NodeClassRef = &v1beta1.NodeClassReference{}
	fillV1beta1NodeClassRef(nc.Spec.NodeClassRef, c)
	nc.Labels = withNodePoolLabel(nc.Labels, c)
}

// karpenter.k8s.aws.

// fillAWSKubelet obeys the kubelet CEL rules: image GC high above low,
// evictionSoft and its grace periods with the same keys.
func fillAWSKubelet(k *awsv1.KubeletConfiguration, c randfill.Continue) {
	*k = awsv1.KubeletConfiguration{}
	if chance(c, 2) {
		k.ClusterDNS = []string{"10.0.1.100"}
	}
	if chance(c, 2) {
		k.MaxPods = ptr.To(int32(c.Intn(250)))
	}
	if chance(c, 3) {
		k.PodsPerCore = ptr.To(int32(c.Intn(10)))
	}
	if chance(c, 2) {
		k.SystemReserved = map[string]string{pick(c, "cpu", "memory", "ephemeral-storage", "pid"): pick(c, "100m", "100Mi", "1Gi")}
	}
	if chance(c, 2) {
		k.KubeReserved = map[string]string{pick(c, "cpu", "memory"): pick(c, "200m", "100Mi")}
	}
	signal := pick(c, "memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "pid.available")
	if chance(c, 2) {
		k.EvictionHard = map[string]string{signal: pick(c, "5%", "100Mi")}
	}
	if chance(c, 2) {
		k.EvictionSoft = map[string]string{signal: pick(c, "15%", "500Mi")}
		k.EvictionSoftGracePeriod = map[string]metav1.Duration{signal: fillDuration(c)}
	}
	if chance(c, 3) {
		k.EvictionMaxPodGracePeriod = ptr.To(int32(c.Intn(120)))
	}
	if chance(c, 3) {
		low := int32(c.Intn(99))
		k.ImageGCLowThresholdPercent = ptr.To(low)
		k.ImageGCHighThresholdPercent = ptr.To(low + 1 + int32(c.Intn(int(100-low))))
	}
	if chance(c, 3) {
		k.CPUCFSQuota = ptr.To(c.Bool())
	}
}

func fillTags(c randfill.Continue) map[string]string {
	return map[string]string{pick(c, "karpenter.sh/discovery", "Name", "team"): pick(c, "*", "cluster", word(c))}
}

func fillSubnetTerm(t *awsv1.SubnetSelectorTerm, c randfill.Continue) {
	*t = pick(c, awsv1.SubnetSelectorTerm{ID: "subnet-" + word(c)}, awsv1.SubnetSelectorTerm{Tags: fillTags(c)})
}

func fillSecurityGroupTerm(t *awsv1.SecurityGroupSelectorTerm, c randfill.Continue) {
	*t = pick(c,
		awsv1.SecurityGroupSelectorTerm{ID: "sg-" + word(c)},
		awsv1.SecurityGroupSelectorTerm{Name: word(c)},
		awsv1.SecurityGroupSelectorTerm{Tags: fillTags(c)})
}

func fillCapacityReservationTerm(t *awsv1.CapacityReservationSelectorTerm, c randfill.Continue) {
	*t = pick(c,
		awsv1.CapacityReservationSelectorTerm{ID: "cr-" + word(c)},
		awsv1.CapacityReservationSelectorTerm{Tags: fillTags(c), OwnerID: pick(c, "", "123456789012")},
		awsv1.CapacityReservationSelectorTerm{InstanceMatchCriteria: pick(c, "open", "targeted")})
}

func fillBlockDeviceMapping(m *awsv1.BlockDeviceMapping, c randfill.Continue) {
	*m = awsv1.BlockDeviceMapping{
		DeviceName: ptr.To(pick(c, "/dev/xvda", "/dev/xvdb", "/dev/sda1")),
		RootVolume: c.Bool(),
		EBS: &awsv1.BlockDevice{
			VolumeSize: ptr.To(resource.MustParse(pick(c, "20Gi", "100Gi", "4Gi"))),
			VolumeType: ptr.To(pick(c, "gp3", "gp2", "io2")),
			Encrypted:  ptr.To(c.Bool()),
		},
	}
	if chance(c, 3) {
		m.EBS.IOPS = ptr.To(int64(3000 + c.Intn(10000)))
		m.EBS.SnapshotID = ptr.To("snap-" + word(c))
		m.EBS.VolumeInitializationRate = ptr.To(int32(100 + c.Intn(201)))
	}
}

func fillV1MetadataOptions(m *awsv1.MetadataOptions, c randfill.Continue) {
	*m = awsv1.MetadataOptions{
		HTTPEndpoint:            ptr.To(pick(c, "enabled", "disabled")),
		HTTPProtocolIPv6:        ptr.To(pick(c, "enabled", "disabled")),
		HTTPPutResponseHopLimit: ptr.To(int64(1 + c.Intn(64))),
		HTTPTokens:              ptr.To(pick(c, "required", "optional")),
	}
}

func fillV1beta1MetadataOptions(m *awsv1beta1.MetadataOptions, c randfill.Continue) {
	v := awsv1.MetadataOptions{}
	fillV1MetadataOptions(&v, c)
	*m = awsv1beta1.MetadataOptions(v)
}

func fillAMI(a *awsv1.AMI, c randfill.Continue) {
	*a = awsv1.AMI{ID: "ami-" + word(c), Name: pick(c, "", "amazon-eks-node-1.30"), Deprecated: chance(c, 4),
		Requirements: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}
}

// fillAMISelection gives a v1 EC2NodeClass an amiFamily and amiSelectorTerms
// the v1 CEL rules accept: an alias alone (with no amiFamily, its own family,
// or Custom), or ordinary terms with a required amiFamily.
func fillAMISelection(s *awsv1.EC2NodeClassSpec, c randfill.Continue) {
	families := []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025}
	if chance(c, 2) {
		family := pick(c, families...)
		version := aliasLatest
		if !strings.HasPrefix(family, "Windows") && chance(c, 2) {
			version = pick(c, "v20240625", "v1.20.3")
		}
		s.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: strings.ToLower(family) + "@" + version}}
		s.AMIFamily = pick(c, nil, ptr.To(family), ptr.To(awsv1.AMIFamilyCustom))
		return
	}
	s.AMIFamily = ptr.To(pick(c, append(families, awsv1.AMIFamilyCustom)...))
	s.AMISelectorTerms = nil
	for range 1 + c.Intn(3) {
		s.AMISelectorTerms = append(s.AMISelectorTerms, pick(c,
			awsv1.AMISelectorTerm{ID: "ami-" + word(c)},
			awsv1.AMISelectorTerm{Tags: fillTags(c)},
			awsv1.AMISelectorTerm{Name: word(c), Owner: pick(c, "", "amazon", "self")},
			awsv1.AMISelectorTerm{SSMParameter: "/my/ami/" + word(c)}))
	}
}

func fillV1EC2NodeClassSpec(s *awsv1.EC2NodeClassSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	fillAMISelection(s, c)
	fillRoleOrProfile(&s.Role, &s.InstanceProfile, c)
	s.InstanceStorePolicy = pick(c, nil, ptr.To(awsv1.InstanceStorePolicyRAID0))
	s.UserData = pick(c, nil, ptr.To("#!/bin/bash\necho hello\n"))
	s.Context = pick(c, nil, ptr.To("ctx-"+word(c)))
	s.Tags = pick(c, nil, map[string]string{"team": word(c)})
}

func fillRoleOrProfile(role *string, profile **string, c randfill.Continue) {
	*role, *profile = "", nil
	if chance(c, 2) {
		*role = "KarpenterNodeRole-" + word(c)
	} else {
		*profile = ptr.To("KarpenterInstanceProfile-" + word(c))
	}
}

// fillV1EC2NodeClass also gives some classes the shape a v1beta1 Ubuntu class
// converts to, with the v1beta1-ubuntu annotation that records it.
func fillV1EC2NodeClass(nc *awsv1.EC2NodeClass, c randfill.Continue) {
	c.FillNoCustom(nc)
	if !chance(c, 5) {
		return
	}
	specifiers := []string{ubuntuAMIFamily}
	nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2)
	if chance(c, 2) {
		specifiers = append(specifiers, ubuntuBlockDeviceMappings)
		nc.Spec.BlockDeviceMappings = ubuntuBlockDevices()
	} else if len(nc.Spec.BlockDeviceMappings) == 0 {
		nc.Spec.BlockDeviceMappings = []*awsv1.BlockDeviceMapping{{}}
		fillBlockDeviceMapping(nc.Spec.BlockDeviceMappings[0], c)
	}
	if chance(c, 2) {
		specifiers = append(specifiers, ubuntuIncompatible)
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: amiPlaceholder}}
	} else {
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "ubuntu-" + word(c), Owner: "099720109477"}}
	}
	nc.Annotations = setAnnotation(nc.Annotations, awsv1.AnnotationUbuntuCompatibility, strings.Join(specifiers, ","))
}

// fillV1beta1EC2NodeClassSpec obeys the v1beta1 rules: a required amiFamily,
// terms required for Custom, id exclusive in a term.
func fillV1beta1EC2NodeClassSpec(s *awsv1beta1.EC2NodeClassSpec, c randfill.Continue) {
	c.FillNoCustom(s)
	s.AMIFamily = ptr.To(pick(c, awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket,
		awsv1beta1.AMIFamilyUbuntu, awsv1.AMIFamilyCustom, awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022))
	s.AMISelectorTerms = nil
	n := c.Intn(3)
	if *s.AMIFamily == awsv1.AMIFamilyCustom {
		n++
	}
	for range n {
		s.AMISelectorTerms = append(s.AMISelectorTerms, pick(c,
			awsv1beta1.AMISelectorTerm{ID: "ami-" + word(c)},
			awsv1beta1.AMISelectorTerm{Tags: fillTags(c)},
			awsv1beta1.AMISelectorTerm{Name: word(c), Owner: pick(c, "", "amazon")}))
	}
	fillRoleOrProfile(&s.Role, &s.InstanceProfile, c)
	s.InstanceStorePolicy = pick(c, nil, ptr.To(awsv1.InstanceStorePolicyRAID0))
	s.UserData = pick(c, nil, ptr.To("[settings.kubernetes]\nkube-api-qps = 30\n"))
	s.Context = pick(c, nil, ptr.To("ctx-"+word(c)))
	s.Tags = pick(c, nil, map[string]string{"team": word(c)})
}

// fillV1beta1EC2NodeClass also gives some classes the v1-alias-version
// annotation, which a v1 -> v1beta1 conversion writes for a pinned alias.
func fillV1beta1EC2NodeClass(nc *awsv1beta1.EC2NodeClass, c randfill.Continue) {
	c.FillNoCustom(nc)
	family := *nc.Spec.AMIFamily
	if len(nc.Spec.AMISelectorTerms) == 0 && isAliasFamily(family) && !strings.HasPrefix(family, "Windows") && chance(c, 3) {
		nc.Annotations = setAnnotation(nc.Annotations, awsv1.AnnotationAliasVersionCompatibility, pick(c, "v20240625", "v1.20.3"))
	}
}

// newRand is the source of the seeded round-trip tests.
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed)) } //nolint:gosec // test data, not secrets
