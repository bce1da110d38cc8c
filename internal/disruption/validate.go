package disruption

import (
	"errors"
	"fmt"
)

// Kinds of validation failure, as Karpenter names them.
const (
	// ValidationChurn: a candidate is no longer a candidate (a pod arrived,
	// it was nominated or annotated, a PDB closed, ...).
	ValidationChurn = "churn"
	// ValidationBudget: the budgets no longer allow the command.
	ValidationBudget = "budget"
	// ValidationScheduling: the pods no longer fit as decided.
	ValidationScheduling = "scheduling"
)

// ValidationError says why a command no longer holds.
type ValidationError struct {
	Kind    string
	Message string
}

// Error says which validation failed and why.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("%s validation failed: %s", e.Kind, e.Message)
}

// IsValidationError reports whether err is a ValidationError.
func IsValidationError(err error) bool {
	var v *ValidationError
	return errors.As(err, &v)
}

// Validate re-checks a command on a later view of the cluster (Karpenter's
// validation after the command validation delay): every candidate must
// still pass the guards and still qualify for the method, the budgets must
// still allow it, a fresh simulation must reach the same decision, and a
// Balanced pool's move must still score at its threshold. It
// returns the command to carry out, with replacements from the fresh
// simulation. An emptiness command is trimmed to the candidates that are
// still empty (and within budget) rather than dropped whole.
func Validate(cmd *Command, in Input, opts Options) (*Command, error) {
	if !cmd.Method.NeedsValidation() {
		return cmd, nil
	}
	p := newPass(in, opts)
	byName := make(map[string]*Candidate, len(p.candidates))
	for _, c := range p.candidates {
		byName[c.NodeClaimName()] = c
	}
	var still []*Candidate
	for _, old := range cmd.Candidates {
		c := byName[old.NodeClaimName()]
		why := ""
		switch {
		case c == nil:
			why = p.blockedBy[old.NodeClaimName()]
			if why == "" {
				why = "it is gone"
			}
		case cmd.Method == MethodEmptiness && !emptyCandidate(c):
			why = "it is not empty any more"
		case cmd.Method != MethodEmptiness:
			if ok, _ := consolidatable(c); !ok {
				why = "it is not consolidatable any more"
			}
		}
		if why == "" {
			still = append(still, c)
			continue
		}
		if cmd.Method != MethodEmptiness {
			return nil, &ValidationError{Kind: ValidationChurn, Message: fmt.Sprintf("node %s: %s", old.Name(), why)}
		}
	}
	if len(still) == 0 {
		return nil, &ValidationError{Kind: ValidationChurn, Message: "no candidate is still empty"}
	}
	// Budgets: the command's nodes are not disrupting yet, so they must fit
	// in what is allowed now.
	var kept []*Candidate
	for _, c := range still {
		if p.budget(c.NodePool.Name, cmd.Reason).take() {
			kept = append(kept, c)
		} else if cmd.Method != MethodEmptiness {
			return nil, &ValidationError{Kind: ValidationBudget, Message: fmt.Sprintf("the %s budget of NodePool %s no longer allows disrupting node %s",
				cmd.Reason, c.NodePool.Name, c.Name())}
		}
	}
	if len(kept) == 0 {
		return nil, &ValidationError{Kind: ValidationBudget, Message: "the budgets no longer allow disrupting any candidate"}
	}
	if cmd.Method == MethodEmptiness {
		out := &Command{Method: cmd.Method, Reason: cmd.Reason, Candidates: kept}
		for _, c := range kept {
			out.PriceBefore += c.Price
		}
		return out, nil
	}
	var out *Command
	var why string
	if len(cmd.AvoidedNodes) > 0 && len(kept) > 2 {
		// The re-pack kept off the other candidates of its pass: simulate
		// it against the same nodes (those gone since are ignored).
		out, why = p.consolidationWith(kept, cmd.Method, len(kept)-1, cmd.AvoidedNodes)
		if !p.repackAllowed(out) {
			out = nil
		}
	}
	if out == nil {
		out, why = p.computeConsolidation(kept, cmd.Method)
	}
	if out == nil {
		return nil, &ValidationError{Kind: ValidationScheduling, Message: why}
	}
	if out.Decision() != cmd.Decision() {
		return nil, &ValidationError{Kind: ValidationScheduling, Message: fmt.Sprintf("the decision changed from %s to %s", cmd.Decision(), out.Decision())}
	}
	// A Balanced pool's move is scored again on the current view: pods
	// that arrived elsewhere in the pool, nodes that joined it, or a lower
	// consolidationThreshold can leave it below the threshold now.
	if !p.scoreCommand(out) {
		for _, s := range p.scores {
			if !s.Approved {
				return nil, &ValidationError{Kind: ValidationScheduling, Message: s.Message()}
			}
		}
	}
	return out, nil
}
