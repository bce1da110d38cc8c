package cloudprovider

import (
	"errors"
	"fmt"
)

// NodeClaimNotFoundError says the instance behind a NodeClaim does not exist
// (any more). Delete returns it once termination is complete.
type NodeClaimNotFoundError struct{ err error }

// NewNodeClaimNotFoundError wraps err as a NodeClaimNotFoundError.
func NewNodeClaimNotFoundError(err error) *NodeClaimNotFoundError {
	return &NodeClaimNotFoundError{err: err}
}

// Error describes the missing instance.
func (e *NodeClaimNotFoundError) Error() string { return fmt.Sprintf("nodeclaim not found: %v", e.err) }

// Unwrap returns the wrapped error.
func (e *NodeClaimNotFoundError) Unwrap() error { return e.err }

// IsNodeClaimNotFoundError reports whether err is or wraps a NodeClaimNotFoundError.
func IsNodeClaimNotFoundError(err error) bool {
	var target *NodeClaimNotFoundError
	return errors.As(err, &target)
}

// IgnoreNodeClaimNotFoundError returns nil for a NodeClaimNotFoundError and err otherwise.
func IgnoreNodeClaimNotFoundError(err error) error {
	if IsNodeClaimNotFoundError(err) {
		return nil
	}
	return err
}

// InsufficientCapacityError says no offering the NodeClaim allows could be
// launched (the cloud is out of that capacity). The core deletes the claim and
// provisions again, avoiding the offerings that failed.
type InsufficientCapacityError struct{ err error }

// NewInsufficientCapacityError wraps err as an InsufficientCapacityError.
func NewInsufficientCapacityError(err error) *InsufficientCapacityError {
	return &InsufficientCapacityError{err: err}
}

// Error describes the capacity shortage.
func (e *InsufficientCapacityError) Error() string {
	return fmt.Sprintf("insufficient capacity: %v", e.err)
}

// Unwrap returns the wrapped error.
func (e *InsufficientCapacityError) Unwrap() error { return e.err }

// IsInsufficientCapacityError reports whether err is or wraps an InsufficientCapacityError.
func IsInsufficientCapacityError(err error) bool {
	var target *InsufficientCapacityError
	return errors.As(err, &target)
}

// IgnoreInsufficientCapacityError returns nil for an InsufficientCapacityError and err otherwise.
func IgnoreInsufficientCapacityError(err error) error {
	if IsInsufficientCapacityError(err) {
		return nil
	}
	return err
}

// NodeClassNotReadyError says the NodeClass a NodeClaim references cannot be
// used to launch yet. The core deletes the claim and waits for the class.
type NodeClassNotReadyError struct{ err error }

// NewNodeClassNotReadyError wraps err as a NodeClassNotReadyError.
func NewNodeClassNotReadyError(err error) *NodeClassNotReadyError {
	return &NodeClassNotReadyError{err: err}
}

// Error describes why the NodeClass cannot be used.
func (e *NodeClassNotReadyError) Error() string { return fmt.Sprintf("nodeclass not ready: %v", e.err) }

// Unwrap returns the wrapped error.
func (e *NodeClassNotReadyError) Unwrap() error { return e.err }

// IsNodeClassNotReadyError reports whether err is or wraps a NodeClassNotReadyError.
func IsNodeClassNotReadyError(err error) bool {
	var target *NodeClassNotReadyError
	return errors.As(err, &target)
}

// IgnoreNodeClassNotReadyError returns nil for a NodeClassNotReadyError and err otherwise.
func IgnoreNodeClassNotReadyError(err error) error {
	if IsNodeClassNotReadyError(err) {
		return nil
	}
	return err
}

// CreateError is a launch failure the core records on the NodeClaim's
// Launched condition (status Unknown) with ConditionReason and
// ConditionMessage before retrying.
type CreateError struct {
	err              error
	ConditionReason  string
	ConditionMessage string
}

// NewCreateError wraps err with the condition reason and message to record.
func NewCreateError(err error, conditionReason, conditionMessage string) *CreateError {
	return &CreateError{err: err, ConditionReason: conditionReason, ConditionMessage: conditionMessage}
}

// Error describes the launch failure.
func (e *CreateError) Error() string { return fmt.Sprintf("creating nodeclaim: %v", e.err) }

// Unwrap returns the wrapped error.
func (e *CreateError) Unwrap() error { return e.err }

// IsCreateError reports whether err is or wraps a CreateError.
func IsCreateError(err error) bool {
	var target *CreateError
	return errors.As(err, &target)
}

// AsCreateError returns the CreateError err is or wraps, if any.
func AsCreateError(err error) (*CreateError, bool) {
	var target *CreateError
	ok := errors.As(err, &target)
	return target, ok
}

// IgnoreCreateError returns nil for a CreateError and err otherwise.
func IgnoreCreateError(err error) error {
	if IsCreateError(err) {
		return nil
	}
	return err
}
