package cloudprovider

import (
	"errors"
	"fmt"
	"testing"
)

func TestTypedErrors(t *testing.T) {
	base := errors.New("boom")
	cases := map[string]struct {
		err                                    error
		notFound, ice, notReady, create, plain bool
	}{
		"not found":         {err: NewNodeClaimNotFoundError(base), notFound: true},
		"wrapped not found": {err: fmt.Errorf("deleting: %w", NewNodeClaimNotFoundError(base)), notFound: true},
		"ice":               {err: NewInsufficientCapacityError(base), ice: true},
		"not ready":         {err: fmt.Errorf("launching: %w", NewNodeClassNotReadyError(base)), notReady: true},
		"create":            {err: NewCreateError(base, "LaunchFailed", "no subnet"), create: true},
		"plain":             {err: base, plain: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IsNodeClaimNotFoundError(tc.err); got != tc.notFound {
				t.Errorf("IsNodeClaimNotFoundError = %v", got)
			}
			if got := IsInsufficientCapacityError(tc.err); got != tc.ice {
				t.Errorf("IsInsufficientCapacityError = %v", got)
			}
			if got := IsNodeClassNotReadyError(tc.err); got != tc.notReady {
				t.Errorf("IsNodeClassNotReadyError = %v", got)
			}
			if got := IsCreateError(tc.err); got != tc.create {
				t.Errorf("IsCreateError = %v", got)
			}
			if got := IgnoreNodeClaimNotFoundError(tc.err) == nil; got != tc.notFound {
				t.Errorf("IgnoreNodeClaimNotFoundError nil = %v", got)
			}
			if got := IgnoreInsufficientCapacityError(tc.err) == nil; got != tc.ice {
				t.Errorf("IgnoreInsufficientCapacityError nil = %v", got)
			}
			if got := IgnoreNodeClassNotReadyError(tc.err) == nil; got != tc.notReady {
				t.Errorf("IgnoreNodeClassNotReadyError nil = %v", got)
			}
			if got := IgnoreCreateError(tc.err) == nil; got != tc.create {
				t.Errorf("IgnoreCreateError nil = %v", got)
			}
			if !errors.Is(tc.err, base) {
				t.Errorf("errors.Is(err, base) = false; typed errors must unwrap")
			}
		})
	}
	ce, ok := AsCreateError(fmt.Errorf("x: %w", NewCreateError(base, "Reason", "Message")))
	if !ok || ce.ConditionReason != "Reason" || ce.ConditionMessage != "Message" {
		t.Errorf("AsCreateError = %+v, %v", ce, ok)
	}
}
