package ssm

import (
	"github.com/aws/smithy-go/middleware"
)

// removeValidation drops the SDK's client-side required-member check so a
// test can see the service's own ValidationException.
func removeValidation(stack *middleware.Stack) error {
	_, err := stack.Initialize.Remove("OperationInputValidation")
	return err
}
