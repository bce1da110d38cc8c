package instanceprofile

import (
	"errors"
	"fmt"

	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
)

// RoleNotFoundError says spec.role names an IAM role that does not exist.
type RoleNotFoundError struct{ Role string }

func (e *RoleNotFoundError) Error() string {
	return fmt.Sprintf("spec.role: IAM role %q not found", e.Role)
}

// IsRoleNotFound reports whether err is, or wraps, a RoleNotFoundError.
func IsRoleNotFound(err error) bool {
	var e *RoleNotFoundError
	return errors.As(err, &e)
}

// NotFoundError says spec.instanceProfile names an instance profile that
// does not exist.
type NotFoundError struct{ Name string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("spec.instanceProfile: instance profile %q not found", e.Name)
}

// IsNotFound reports whether err is, or wraps, a NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}

// isNoSuchEntity reports whether IAM answered NoSuchEntity.
func isNoSuchEntity(err error) bool {
	var typed *iamtypes.NoSuchEntityException
	if errors.As(err, &typed) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "NoSuchEntity"
}

// isAlreadyExists reports whether IAM answered EntityAlreadyExists.
func isAlreadyExists(err error) bool {
	var typed *iamtypes.EntityAlreadyExistsException
	if errors.As(err, &typed) {
		return true
	}
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorCode() == "EntityAlreadyExists"
}
