package conversion

import (
	"fmt"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
)

// EC2NodeClassToV1 converts a v1beta1 EC2NodeClass to v1.
//
//  1. amiFamily AL2, AL2023, Bottlerocket or Windows20xx without
//     amiSelectorTerms becomes the alias term family@version (version from the
//     v1-alias-version annotation, else latest) and amiFamily is unset; with
//     terms, amiFamily and the terms are kept.
//  2. Ubuntu, which v1 does not have, becomes AL2 (same user-data format) as in
//     Karpenter v1.0: Ubuntu's default block device when there were none, the
//     placeholder term {id: ami-placeholder} when there were no terms (the
//     class is then incompatible and never used to launch), and the
//     v1beta1-ubuntu annotation recording what was added.
//  3. Custom, or no amiFamily, becomes Custom with the terms kept.
//  4. The v1 values kept in the v1-fields annotation by an earlier v1 -> v1beta1
//     conversion (kubelet, capacityReservationSelectorTerms,
//     status.capacityReservations, an AMI selection
//     v1beta1 cannot express) are restored, and the annotation removed.
//
// Every other field, and the status, is copied.
func (c *Converter) EC2NodeClassToV1(in *awsv1beta1.EC2NodeClass) (*awsv1.EC2NodeClass, error) {
	in = in.DeepCopy()
	out := &awsv1.EC2NodeClass{TypeMeta: typeMeta(awsv1.SchemeGroupVersion, "EC2NodeClass"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	kept := ec2NodeClassV1Fields{}
	if _, err := popJSONAnnotation(annotations, EC2NodeClassV1FieldsAnnotationKey, &kept); err != nil {
		return nil, fmt.Errorf("converting EC2NodeClass %q to v1: %w", in.Name, err)
	}

	current := v1beta1AMI{
		AMIFamily:           in.Spec.AMIFamily,
		AMISelectorTerms:    in.Spec.AMISelectorTerms,
		BlockDeviceMappings: in.Spec.BlockDeviceMappings,
	}
	if version, ok := annotations[awsv1.AnnotationAliasVersionCompatibility]; ok {
		current.AliasVersion = &version
	}
	delete(annotations, awsv1.AnnotationAliasVersionCompatibility)
	ami := amiToV1(current)
	if kept.AMI != nil && equal(amiToV1beta1(*kept.AMI), current) {
		ami = *kept.AMI
	}

	s, from := &out.Spec, &in.Spec
	s.SubnetSelectorTerms = from.SubnetSelectorTerms
	s.SecurityGroupSelectorTerms = from.SecurityGroupSelectorTerms
	s.AssociatePublicIPAddress = from.AssociatePublicIPAddress
	s.AMIFamily = ami.AMIFamily
	s.AMISelectorTerms = ami.AMISelectorTerms
	s.BlockDeviceMappings = ami.BlockDeviceMappings
	s.UserData = from.UserData
	s.Role = from.Role
	s.InstanceProfile = from.InstanceProfile
	s.Tags = from.Tags
	s.InstanceStorePolicy = from.InstanceStorePolicy
	s.DetailedMonitoring = from.DetailedMonitoring
	s.Context = from.Context
	if m := from.MetadataOptions; m != nil {
		s.MetadataOptions = &awsv1.MetadataOptions{
			HTTPEndpoint:            m.HTTPEndpoint,
			HTTPProtocolIPv6:        m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit,
			HTTPTokens:              m.HTTPTokens,
		}
	}
	s.Kubelet = kept.Kubelet
	s.CapacityReservationSelectorTerms = kept.CapacityReservationSelectorTerms

	delete(annotations, awsv1.AnnotationUbuntuCompatibility)
	if ami.Ubuntu != nil {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[awsv1.AnnotationUbuntuCompatibility] = *ami.Ubuntu
	}
	out.Status = awsv1.EC2NodeClassStatus{
		Subnets:              in.Status.Subnets,
		SecurityGroups:       in.Status.SecurityGroups,
		CapacityReservations: kept.CapacityReservations,
		AMIs:                 in.Status.AMIs,
		InstanceProfile:      in.Status.InstanceProfile,
		Conditions:           in.Status.Conditions,
	}
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}

// EC2NodeClassToV1beta1 converts a v1 EC2NodeClass to v1beta1, the inverse of
// EC2NodeClassToV1: amiFamily is the explicit one or the alias's family, alias
// terms are dropped (a pinned version goes to the v1-alias-version
// annotation), an Ubuntu class recorded by the v1beta1-ubuntu annotation
// becomes Ubuntu again without what the conversion injected, and the v1 values
// v1beta1 cannot express go into the v1-fields annotation.
func (c *Converter) EC2NodeClassToV1beta1(in *awsv1.EC2NodeClass) (*awsv1beta1.EC2NodeClass, error) {
	in = in.DeepCopy()
	out := &awsv1beta1.EC2NodeClass{TypeMeta: typeMeta(awsv1beta1.SchemeGroupVersion, "EC2NodeClass"), ObjectMeta: in.ObjectMeta}
	annotations := out.Annotations
	delete(annotations, EC2NodeClassV1FieldsAnnotationKey)

	selection := amiSelection{
		AMIFamily:           in.Spec.AMIFamily,
		AMISelectorTerms:    in.Spec.AMISelectorTerms,
		BlockDeviceMappings: in.Spec.BlockDeviceMappings,
	}
	if ubuntu, ok := annotations[awsv1.AnnotationUbuntuCompatibility]; ok {
		selection.Ubuntu = &ubuntu
	}
	delete(annotations, awsv1.AnnotationUbuntuCompatibility)
	ami := amiToV1beta1(selection)

	s, from := &out.Spec, &in.Spec
	s.SubnetSelectorTerms = from.SubnetSelectorTerms
	s.SecurityGroupSelectorTerms = from.SecurityGroupSelectorTerms
	s.AssociatePublicIPAddress = from.AssociatePublicIPAddress
	s.AMIFamily = ami.AMIFamily
	s.AMISelectorTerms = ami.AMISelectorTerms
	s.BlockDeviceMappings = ami.BlockDeviceMappings
	s.UserData = from.UserData
	s.Role = from.Role
	s.InstanceProfile = from.InstanceProfile
	s.Tags = from.Tags
	s.InstanceStorePolicy = from.InstanceStorePolicy
	s.DetailedMonitoring = from.DetailedMonitoring
	s.Context = from.Context
	if m := from.MetadataOptions; m != nil {
		s.MetadataOptions = &awsv1beta1.MetadataOptions{
			HTTPEndpoint:            m.HTTPEndpoint,
			HTTPProtocolIPv6:        m.HTTPProtocolIPv6,
			HTTPPutResponseHopLimit: m.HTTPPutResponseHopLimit,
			HTTPTokens:              m.HTTPTokens,
		}
	}

	delete(annotations, awsv1.AnnotationAliasVersionCompatibility)
	if ami.AliasVersion != nil {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[awsv1.AnnotationAliasVersionCompatibility] = *ami.AliasVersion
	}

	kept := ec2NodeClassV1Fields{Kubelet: from.Kubelet, CapacityReservationSelectorTerms: from.CapacityReservationSelectorTerms,
		CapacityReservations: in.Status.CapacityReservations}
	if !equal(amiToV1(ami), selection) {
		kept.AMI = &selection
	}
	if kept.AMI != nil || kept.Kubelet != nil || len(kept.CapacityReservationSelectorTerms) > 0 || len(kept.CapacityReservations) > 0 {
		var err error
		if annotations, err = setJSONAnnotation(annotations, EC2NodeClassV1FieldsAnnotationKey, kept); err != nil {
			return nil, fmt.Errorf("converting EC2NodeClass %q to v1beta1: %w", in.Name, err)
		}
	}
	out.Status = awsv1beta1.EC2NodeClassStatus{
		Subnets:         in.Status.Subnets,
		SecurityGroups:  in.Status.SecurityGroups,
		AMIs:            in.Status.AMIs,
		InstanceProfile: in.Status.InstanceProfile,
		Conditions:      in.Status.Conditions,
	}
	out.Annotations = nilIfEmpty(annotations)
	return out, nil
}
