package userdata

import (
	"fmt"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

// Validate checks an EC2NodeClass's spec.userData for its AMI family
// without rendering a node: that it is within MaxSize, and that it parses
// the way the family's merge reads it (a well-formed MIME document for AL2
// and AL2023, NodeConfig documents of the right apiVersion and kind for
// AL2023, TOML for Bottlerocket, no <powershell> tags for Windows). The
// error names spec.userData and the problem; the EC2NodeClass controller
// reports it with ValidationSucceeded=False.
func Validate(family, userData string) error {
	if err := checkSize(len(userData)); err != nil {
		return fmt.Errorf("spec.userData: %w", err)
	}
	if userData == "" {
		return nil
	}
	var err error
	switch family {
	case awsv1.AMIFamilyAL2:
		_, err = userParts(&userData, true, func(string) string { return shellContentType })
	case awsv1.AMIFamilyAL2023:
		var parts []mimePart
		parts, err = userParts(&userData, false, al2023ContentType)
		if err == nil {
			err = validateNodeConfigParts(parts)
		}
	case awsv1.AMIFamilyBottlerocket:
		_, _, _, err = parseBottlerocket(userData)
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		err = validateWindows(userData)
	case awsv1.AMIFamilyCustom:
	default:
		return fmt.Errorf("validating spec.userData: unknown AMI family %q", family)
	}
	if err != nil {
		return &InvalidUserDataError{Family: family, Err: err}
	}
	return nil
}
