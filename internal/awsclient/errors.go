package awsclient

import (
	"errors"

	"github.com/aws/smithy-go"
)

// ErrorCode returns the AWS error code err carries (for example
// "InvalidInstanceID.NotFound"), or "" when it carries none.
func ErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
