package nodeclass

import (
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/ami"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instanceprofile"
)

// Condition reasons. A True condition's reason is its type.
const (
	ReasonSubnetsNotFound             = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound      = "SecurityGroupsNotFound"
	ReasonAMINotFound                 = "AMINotFound"
	ReasonUnsupportedAlias            = "UnsupportedAlias"
	ReasonInstanceProfileNotFound     = "InstanceProfileNotFound"
	ReasonRoleNotFound                = "RoleNotFound"
	ReasonUserDataInvalid             = "UserDataInvalid"
	ReasonClusterCIDRResolutionFailed = "ClusterCIDRResolutionFailed"
	// ReasonResolutionFailed marks a condition Unknown when AWS could not be
	// asked and no earlier verdict exists.
	ReasonResolutionFailed = "ResolutionFailed"
	// ReasonReady is the reason of a True Ready condition.
	ReasonReady = "Ready"
)

// dependents are the conditions Ready is the AND of, in the order their
// problems are reported.
var dependents = []string{
	v1.ConditionTypeSubnetsReady,
	v1.ConditionTypeSecurityGroupsReady,
	v1.ConditionTypeAMIsReady,
	v1.ConditionTypeInstanceProfileReady,
	v1.ConditionTypeValidationSucceeded,
	v1.ConditionTypeCapacityReservationsReady,
}

// verdict is what one check says about its condition.
type verdict struct {
	Status  metav1.ConditionStatus
	Reason  string
	Message string
}

func ok(condType string) verdict {
	return verdict{Status: metav1.ConditionTrue, Reason: condType}
}

func failed(reason, format string, args ...any) verdict {
	return verdict{Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// The *Verdict functions map a check's result to its condition. A non-nil
// error return is transient (AWS or the API server could not answer): the
// caller keeps the earlier verdict and retries.

func subnetsVerdict(found int, err error) (verdict, error) {
	switch {
	case err != nil:
		return verdict{}, err
	case found == 0:
		return failed(ReasonSubnetsNotFound, "spec.subnetSelectorTerms matched no subnet"), nil
	}
	return ok(v1.ConditionTypeSubnetsReady), nil
}

func securityGroupsVerdict(found int, err error) (verdict, error) {
	switch {
	case err != nil:
		return verdict{}, err
	case found == 0:
		return failed(ReasonSecurityGroupsNotFound, "spec.securityGroupSelectorTerms matched no security group"), nil
	}
	return ok(v1.ConditionTypeSecurityGroupsReady), nil
}

func amisVerdict(found int, err error) (verdict, error) {
	switch {
	case ami.IsUnsupportedAlias(err):
		return failed(ReasonUnsupportedAlias, "%s", err.Error()), nil
	case ami.IsNotFound(err):
		return failed(ReasonAMINotFound, "%s", err.Error()), nil
	case err != nil:
		return verdict{}, err
	case found == 0:
		return failed(ReasonAMINotFound, "spec.amiSelectorTerms matched no AMI"), nil
	}
	return ok(v1.ConditionTypeAMIsReady), nil
}

func instanceProfileVerdict(err error) (verdict, error) {
	switch {
	case instanceprofile.IsRoleNotFound(err):
		return failed(ReasonRoleNotFound, "%s", err.Error()), nil
	case instanceprofile.IsNotFound(err):
		return failed(ReasonInstanceProfileNotFound, "%s", err.Error()), nil
	case err != nil:
		return verdict{}, err
	}
	return ok(v1.ConditionTypeInstanceProfileReady), nil
}

// validationVerdict judges the user data (userDataErr from the family's
// parser) and, for AL2023, the cluster's service CIDR (cidrErr). A CIDR
// failure is reported even when transient, since launches cannot render
// user data without it, and is then also returned so the class is retried.
func validationVerdict(family string, userDataErr, cidrErr error) (verdict, error) {
	var v verdict
	var messages []string
	if userDataErr != nil {
		v.Reason = ReasonUserDataInvalid
		msg := userDataErr.Error()
		if !strings.Contains(msg, "spec.userData") {
			// The validator's errors usually name the field already.
			msg = fmt.Sprintf("spec.userData is not valid %s user data: %s", family, msg)
		}
		messages = append(messages, msg)
	}
	if cidrErr != nil {
		if v.Reason == "" {
			v.Reason = ReasonClusterCIDRResolutionFailed
		}
		messages = append(messages, fmt.Sprintf("resolving the cluster's service CIDR for %s user data: %v", family, cidrErr))
	}
	var retry error
	if cidrErr != nil && !errors.Is(cidrErr, ErrNoServiceCIDR) {
		retry = cidrErr
	}
	if len(messages) == 0 {
		return ok(v1.ConditionTypeValidationSucceeded), nil
	}
	v.Status, v.Message = metav1.ConditionFalse, strings.Join(messages, "; ")
	return v, retry
}

// readyVerdict ANDs the dependents: False if any is False (reason of the
// first, messages of all), else Unknown if any is Unknown or missing, else
// True.
func readyVerdict(conditions []metav1.Condition) verdict {
	byType := map[string]metav1.Condition{}
	for _, c := range conditions {
		byType[c.Type] = c
	}
	var falseReason, unknownReason string
	var messages, unknown []string
	for _, t := range dependents {
		c, found := byType[t]
		switch {
		case found && c.Status == metav1.ConditionFalse:
			if falseReason == "" {
				falseReason = c.Reason
			}
			messages = append(messages, c.Message)
		case !found || c.Status != metav1.ConditionTrue:
			if unknownReason == "" {
				unknownReason = ReasonResolutionFailed
				if found {
					unknownReason = c.Reason
				}
			}
			unknown = append(unknown, t)
		}
	}
	switch {
	case falseReason != "":
		return verdict{Status: metav1.ConditionFalse, Reason: falseReason, Message: strings.Join(messages, "; ")}
	case unknownReason != "":
		return verdict{Status: metav1.ConditionUnknown, Reason: unknownReason, Message: "not resolved yet: " + strings.Join(unknown, ", ")}
	}
	return ok(ReasonReady)
}

// Family is the class's AMI family (EC2NodeClass.AMIFamily): spec.amiFamily,
// else the family its alias names, else Custom.
func Family(nodeClass *v1.EC2NodeClass) string {
	return nodeClass.AMIFamily()
}
