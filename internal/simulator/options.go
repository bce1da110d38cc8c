package simulator

import corev1 "k8s.io/api/core/v1"

// PreferencePolicy says what to do with pods' soft constraints.
type PreferencePolicy string

const (
	// PreferencesRespect treats preferences (preferred node and pod
	// affinities, ScheduleAnyway spreads, PreferNoSchedule taints) as
	// requirements and relaxes them one at a time, in a fixed order, only for
	// pods that cannot be placed otherwise. It is the default.
	PreferencesRespect PreferencePolicy = "Respect"
	// PreferencesIgnore drops preferences: pods are placed by their hard
	// constraints only.
	PreferencesIgnore PreferencePolicy = "Ignore"
)

// MinValuesPolicy says what to do when a NodePool's minValues cannot be met.
type MinValuesPolicy string

const (
	// MinValuesStrict leaves pods unplaced rather than create a NodeClaim
	// whose instance types do not cover every minValues. It is the default.
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort creates the NodeClaim anyway and marks it
	// (NewNodeClaim.MinValuesRelaxed).
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// DefaultMaxInstanceTypes is how many instance-type options a NodeClaim
// carries at most, as in Karpenter.
const DefaultMaxInstanceTypes = 600

// Options tune a Model. The zero value means the defaults.
type Options struct {
	PreferencePolicy PreferencePolicy
	MinValuesPolicy  MinValuesPolicy
	// MaxInstanceTypes caps each new NodeClaim's instance-type options;
	// 0 means DefaultMaxInstanceTypes.
	MaxInstanceTypes int
}

func (o Options) withDefaults() Options {
	if o.PreferencePolicy == "" {
		o.PreferencePolicy = PreferencesRespect
	}
	if o.MinValuesPolicy == "" {
		o.MinValuesPolicy = MinValuesStrict
	}
	if o.MaxInstanceTypes <= 0 {
		o.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	return o
}

// Request is one simulation against a Model.
type Request struct {
	// Pods to place. They may be pending pods of the snapshot or pods bound to
	// its nodes (to simulate moving them); a bound pod stops counting on its
	// node (capacity and topology) for this solve.
	Pods []*corev1.Pod
	// RemoveNodes are treated as gone: nothing is placed on them and their
	// pods no longer count for topology. Their capacity no longer counts
	// against their NodePool's limits.
	RemoveNodes []string
	// AvoidNodes stay (their pods still count) but get no new pods.
	AvoidNodes []string
	// MaxNewNodeClaims caps how many NodeClaims the plan may create; nil
	// means no cap.
	MaxNewNodeClaims *int
	// MaxNewNodeClaimPrice, when positive, restricts new NodeClaims to
	// instance types whose cheapest compatible offering costs strictly less
	// (consolidation's "strictly cheaper replacement").
	MaxNewNodeClaimPrice float64
	// SkipReasons leaves the Reason of unschedulable pods empty. Explaining
	// a failure looks at every node and NodePool; what-if callers that only
	// need to know whether the pods fit (consolidation tries hundreds of
	// candidates, most of which do not) save that work.
	SkipReasons bool
}
