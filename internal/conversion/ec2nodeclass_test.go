package conversion

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
)

// v1beta1Class returns a v1beta1 AL2 EC2NodeClass without terms; edit changes it.
func v1beta1Class(edit func(*awsv1beta1.EC2NodeClass)) *awsv1beta1.EC2NodeClass {
	nc := &awsv1beta1.EC2NodeClass{
		TypeMeta:   typeMeta(awsv1beta1.SchemeGroupVersion, "EC2NodeClass"),
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1beta1.EC2NodeClassSpec{
			AMIFamily:                  ptr.To("AL2"),
			Role:                       "KarpenterNodeRole",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

// v1Class returns the v1 EC2NodeClass v1beta1Class(nil) converts to; edit changes it.
func v1Class(edit func(*awsv1.EC2NodeClass)) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		TypeMeta:   typeMeta(awsv1.SchemeGroupVersion, "EC2NodeClass"),
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: awsv1.EC2NodeClassSpec{
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2@latest"}},
			Role:                       "KarpenterNodeRole",
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
		},
	}
	if edit != nil {
		edit(nc)
	}
	return nc
}

func TestEC2NodeClassToV1(t *testing.T) {
	t.Parallel()
	customBDM := []*awsv1.BlockDeviceMapping{{DeviceName: ptr.To("/dev/xvda"), EBS: &awsv1.BlockDevice{VolumeSize: ptr.To(resource.MustParse("100Gi"))}}}
	cases := map[string]struct {
		in   *awsv1beta1.EC2NodeClass
		want *awsv1.EC2NodeClass
	}{
		"AL2 without terms becomes the alias al2@latest": {
			in:   v1beta1Class(nil),
			want: v1Class(nil),
		},
		"every alias family": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("Windows2022") }),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}
			}),
		},
		"the v1-alias-version annotation pins the alias and is removed": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("Bottlerocket")
				nc.Annotations = map[string]string{awsv1.AnnotationAliasVersionCompatibility: "v1.20.3"}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.3"}}
			}),
		},
		"a family with terms keeps both": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2023")
				nc.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{Name: "my-ami-*", Owner: "self"}, {ID: "ami-123"}}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2023")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "my-ami-*", Owner: "self"}, {ID: "ami-123"}}
			}),
		},
		"Custom keeps its terms": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("Custom")
				nc.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{Tags: map[string]string{"team": "a"}}}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("Custom")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: map[string]string{"team": "a"}}}
			}),
		},
		"Ubuntu without terms or block devices: AL2, Ubuntu's root volume, placeholder term, incompatible": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("Ubuntu") }),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Annotations = map[string]string{awsv1.AnnotationUbuntuCompatibility: "amiFamily,blockDeviceMappings,incompatible"}
				nc.Spec.AMIFamily = ptr.To("AL2")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-placeholder"}}
				nc.Spec.BlockDeviceMappings = ubuntuBlockDevices()
			}),
		},
		"Ubuntu with terms and block devices keeps them": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("Ubuntu")
				nc.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{Name: "ubuntu/*", Owner: "099720109477"}}
				nc.Spec.BlockDeviceMappings = customBDM
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Annotations = map[string]string{awsv1.AnnotationUbuntuCompatibility: "amiFamily"}
				nc.Spec.AMIFamily = ptr.To("AL2")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Name: "ubuntu/*", Owner: "099720109477"}}
				nc.Spec.BlockDeviceMappings = customBDM
			}),
		},
		"other fields and the status are copied": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.Role = ""
				nc.Spec.InstanceProfile = ptr.To("profile")
				nc.Spec.AssociatePublicIPAddress = ptr.To(false)
				nc.Spec.UserData = ptr.To("echo hi")
				nc.Spec.Tags = map[string]string{"team": "a"}
				nc.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
				nc.Spec.DetailedMonitoring = ptr.To(true)
				nc.Spec.Context = ptr.To("ctx")
				nc.Spec.MetadataOptions = &awsv1beta1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPPutResponseHopLimit: ptr.To[int64](2)}
				nc.Spec.BlockDeviceMappings = customBDM
				nc.Status = awsv1beta1.EC2NodeClassStatus{
					Subnets:         []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
					SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1", Name: "default"}},
					AMIs:            []awsv1.AMI{{ID: "ami-1", Name: "n", Requirements: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
					InstanceProfile: "profile",
					Conditions:      []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
				}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Role = ""
				nc.Spec.InstanceProfile = ptr.To("profile")
				nc.Spec.AssociatePublicIPAddress = ptr.To(false)
				nc.Spec.UserData = ptr.To("echo hi")
				nc.Spec.Tags = map[string]string{"team": "a"}
				nc.Spec.InstanceStorePolicy = ptr.To(awsv1.InstanceStorePolicyRAID0)
				nc.Spec.DetailedMonitoring = ptr.To(true)
				nc.Spec.Context = ptr.To("ctx")
				nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPEndpoint: ptr.To("enabled"), HTTPPutResponseHopLimit: ptr.To[int64](2)}
				nc.Spec.BlockDeviceMappings = customBDM
				nc.Status = awsv1.EC2NodeClassStatus{
					Subnets:         []awsv1.Subnet{{ID: "subnet-1", Zone: "us-west-2a", ZoneID: "usw2-az1"}},
					SecurityGroups:  []awsv1.SecurityGroup{{ID: "sg-1", Name: "default"}},
					AMIs:            []awsv1.AMI{{ID: "ami-1", Name: "n", Requirements: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}},
					InstanceProfile: "profile",
					Conditions:      []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}},
				}
			}),
		},
		"v1-fields restore kubelet, capacity reservations and the AMI selection": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"ami":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"al2@latest"}]},"kubelet":{"maxPods":110},"capacityReservationSelectorTerms":[{"id":"cr-1"}]}`}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2")
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
				nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{ID: "cr-1"}}
			}),
		},
		"a kept AMI selection is ignored once the v1beta1 amiFamily changed": {
			in: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("Bottlerocket")
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"ami":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"al2@latest"}]}}`}
			}),
			want: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Converter{}).EC2NodeClassToV1(tc.in)
			checkErr(t, err, "")
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("EC2NodeClassToV1() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEC2NodeClassToV1beta1(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		in   *awsv1.EC2NodeClass
		want *awsv1beta1.EC2NodeClass
	}{
		"an alias becomes its family without terms": {
			in:   v1Class(nil),
			want: v1beta1Class(nil),
		},
		"a pinned alias version goes to v1-alias-version": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20240625"}}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2023")
				nc.Annotations = map[string]string{awsv1.AnnotationAliasVersionCompatibility: "v20240625"}
			}),
		},
		"windows2025, which the v1beta1 enum lacks, keeps its name": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("Windows2025") }),
		},
		"an explicit amiFamily beside an alias is kept in v1-fields": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("AL2") }),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"ami":{"amiFamily":"AL2","amiSelectorTerms":[{"alias":"al2@latest"}]}}`}
			}),
		},
		"ssmParameter terms are dropped from the terms and kept in v1-fields": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2023")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{SSMParameter: "/my/ami"}, {ID: "ami-1"}}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMIFamily = ptr.To("AL2023")
				nc.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{ID: "ami-1"}}
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"ami":{"amiFamily":"AL2023","amiSelectorTerms":[{"ssmParameter":"/my/ami"},{"id":"ami-1"}]}}`}
			}),
		},
		"kubelet and capacity reservations go to v1-fields": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)}
				nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{InstanceMatchCriteria: "open"}}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"kubelet":{"maxPods":110},"capacityReservationSelectorTerms":[{"instanceMatchCriteria":"open"}]}`}
			}),
		},
		"a converted Ubuntu class becomes Ubuntu again without the injected parts": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Annotations = map[string]string{awsv1.AnnotationUbuntuCompatibility: "amiFamily,blockDeviceMappings,incompatible"}
				nc.Spec.AMIFamily = ptr.To("AL2")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-placeholder"}}
				nc.Spec.BlockDeviceMappings = ubuntuBlockDevices()
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) { nc.Spec.AMIFamily = ptr.To("Ubuntu") }),
		},
		"an Ubuntu annotation on a class changed since is not trusted": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Annotations = map[string]string{awsv1.AnnotationUbuntuCompatibility: "amiFamily,incompatible"}
				nc.Spec.AMIFamily = ptr.To("AL2")
				nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: "ami-0123"}}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.AMISelectorTerms = []awsv1beta1.AMISelectorTerm{{ID: "ami-0123"}}
				nc.Annotations = map[string]string{EC2NodeClassV1FieldsAnnotationKey: `{"ami":{"amiFamily":"AL2","amiSelectorTerms":[{"id":"ami-0123"}],"ubuntu":"amiFamily,incompatible"}}`}
			}),
		},
		"metadataOptions are copied field by field": {
			in: v1Class(func(nc *awsv1.EC2NodeClass) {
				nc.Spec.MetadataOptions = &awsv1.MetadataOptions{HTTPTokens: ptr.To("optional"), HTTPProtocolIPv6: ptr.To("enabled")}
			}),
			want: v1beta1Class(func(nc *awsv1beta1.EC2NodeClass) {
				nc.Spec.MetadataOptions = &awsv1beta1.MetadataOptions{HTTPTokens: ptr.To("optional"), HTTPProtocolIPv6: ptr.To("enabled")}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := (&Converter{}).EC2NodeClassToV1beta1(tc.in)
			checkErr(t, err, "")
			if diff := cmp.Diff(tc.want, got, cmpOptions()...); diff != "" {
				t.Errorf("EC2NodeClassToV1beta1() (-want +got):\n%s", diff)
			}
		})
	}
}
