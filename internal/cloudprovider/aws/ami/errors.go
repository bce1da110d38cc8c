package ami

import (
	"errors"
	"fmt"
)

// UnsupportedAliasError says an alias names an unknown family, a version in
// the wrong format, or a family that has no AMIs for the cluster's
// Kubernetes version. Retrying does not help until the spec changes.
type UnsupportedAliasError struct{ msg string }

func (e *UnsupportedAliasError) Error() string { return e.msg }

func unsupported(format string, args ...any) error {
	return &UnsupportedAliasError{msg: fmt.Sprintf(format, args...)}
}

// IsUnsupportedAlias reports whether err is, or wraps, an UnsupportedAliasError.
func IsUnsupportedAlias(err error) bool {
	var e *UnsupportedAliasError
	return errors.As(err, &e)
}

// NotFoundError says the selector terms matched no usable AMI: no image, no
// SSM parameter of an alias, or an ssmParameter that does not exist.
type NotFoundError struct{ msg string }

func (e *NotFoundError) Error() string { return e.msg }

func notFound(format string, args ...any) error {
	return &NotFoundError{msg: fmt.Sprintf(format, args...)}
}

// IsNotFound reports whether err is, or wraps, a NotFoundError.
func IsNotFound(err error) bool {
	var e *NotFoundError
	return errors.As(err, &e)
}
