package simulator

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
	"github.com/dovetail-autoscaler/dovetail/internal/simulator/resources"
)

// podSig is everything about a pod that placement depends on, except its
// resource requests: pods with equal signatures (the replicas of a workload)
// share one compiled copy.
type podSig struct {
	id        int32
	namespace string
	labels    map[string]string
	invalid   string // why no pod of this signature can be placed

	strict     []creqs  // nodeSelector AND one required node-affinity term, per term
	strictSrc  []string // where each alternative comes from, for messages
	volumes    []creqs  // one alternative per combination of volume topologies; nil: no constraint
	volumeSrc  string
	prefNode   []creqs // preferred node-affinity terms, heaviest first
	prefWeight []int32

	tolerations []corev1.Toleration
	ports       []hostPort

	spreads  []podTerm // in pod order
	affinity []podTerm // required, then preferred heaviest first
	anti     []podTerm

	selectedBy []int32 // topology groups whose selector matches the pod
	inverse    []int32 // required anti-affinity groups that select the pod (other pods' constraints)
	ownsAnti   []int32 // required anti-affinity groups the pod owns

	steps []relaxStep
	views []*podView // one per relaxation level

	ownNode bool // required hostname anti-affinity that selects the pod itself
}

// podTerm is one topology constraint of a pod: a spread constraint or a pod
// (anti-)affinity term.
type podTerm struct {
	tg       int32
	required bool
	weight   int32
}

type relaxKind uint8

const (
	relaxPodAffinity relaxKind = iota
	relaxPodAntiAffinity
	relaxNodeAffinity
	relaxSpread
	relaxPreferNoSchedule
)

// relaxStep drops one preference: the index-th preferred term of its kind.
type relaxStep struct {
	kind  relaxKind
	index int
}

// compiler compiles pods into signatures and topology groups. While New
// runs it writes into the model; during a solve it writes into the solve's
// own tables, layered over the model's.
type compiler struct {
	m        *Model
	keys     *interner
	vals     *interner
	sigByKey map[string]*podSig
	sigs     *[]*podSig
	tgs      *[]*tg
	tgByDef  map[string]int32
	tgBase   int32 // id of the first group in *tgs
	sigBase  int32 // id of the first signature in *sigs
	viewBase *int32
	buf      []byte
	scratch  resources.Vector
}

func (m *Model) compiler() *compiler {
	return &compiler{m: m, keys: m.keys, vals: m.vals, sigByKey: m.sigByKey, sigs: &m.sigs, tgs: &m.tgs, tgByDef: m.tgByDef, viewBase: &m.views}
}

func (c *compiler) compilePod(pod *corev1.Pod) *podInfo {
	m := c.m
	pi := &podInfo{pod: pod, node: -1, req: m.res.New()}
	if c.scratch == nil {
		c.scratch = m.res.New()
	}
	if err := m.res.PodRequests(pod, pi.req, c.scratch); err != nil {
		pi.invalid = fmt.Sprintf("invalid resource requests: %v", err)
	}
	c.buf = c.sigKey(c.buf[:0], pod)
	if sig, ok := c.lookupSig(c.buf); ok {
		pi.sig = sig
		return pi
	}
	sig := c.newSig(pod)
	c.sigByKey[string(c.buf)] = sig
	*c.sigs = append(*c.sigs, sig)
	pi.sig = sig
	return pi
}

func (c *compiler) lookupSig(key []byte) (*podSig, bool) {
	if sig, ok := c.m.sigByKey[string(key)]; ok {
		return sig, true
	}
	sig, ok := c.sigByKey[string(key)]
	return sig, ok
}

func (c *compiler) newSig(pod *corev1.Pod) *podSig {
	m := c.m
	sig := &podSig{id: c.sigBase + int32(len(*c.sigs)), namespace: pod.Namespace, labels: pod.Labels, tolerations: pod.Spec.Tolerations}
	var problems []string

	alts, err := requirements.PodRequirements(pod)
	if err != nil {
		problems = append(problems, err.Error())
	}
	for i, alt := range alts {
		sig.strict = append(sig.strict, compileReqs(c.keys, c.vals, alt))
		src := "pod nodeSelector"
		if aff := pod.Spec.Affinity; aff != nil && aff.NodeAffinity != nil && aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			src = fmt.Sprintf("pod nodeSelector and required node affinity term %d", i)
			if len(pod.Spec.NodeSelector) == 0 {
				src = fmt.Sprintf("pod required node affinity term %d", i)
			}
		}
		sig.strictSrc = append(sig.strictSrc, src)
	}
	prefs, err := requirements.PodPreferences(pod)
	if err != nil {
		problems = append(problems, err.Error())
	}
	for _, p := range prefs {
		sig.prefNode = append(sig.prefNode, compileReqs(c.keys, c.vals, p.Requirements))
		sig.prefWeight = append(sig.prefWeight, p.Weight)
	}
	vols, volSrc, err := m.volumeRequirements(pod)
	if err != nil {
		problems = append(problems, err.Error())
	}
	for _, v := range vols {
		sig.volumes = append(sig.volumes, compileReqs(c.keys, c.vals, v))
	}
	sig.volumeSrc = volSrc
	sig.ports = podHostPorts(pod)

	if err := c.topologyTerms(pod, sig); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		sig.invalid = strings.Join(problems, "; ")
	}
	sig.steps = relaxSteps(sig, m.anyPreferNoSchedule)
	return sig
}

// relaxSteps lists the preferences of a signature in the order they are
// dropped: preferred pod affinity terms, preferred pod anti-affinity terms,
// preferred node-affinity terms (each heaviest first), ScheduleAnyway spreads
// (in pod order), and finally tolerating PreferNoSchedule taints.
func relaxSteps(sig *podSig, anyPreferNoSchedule bool) []relaxStep {
	var steps []relaxStep
	for i, t := range sig.affinity {
		if !t.required {
			steps = append(steps, relaxStep{relaxPodAffinity, i})
		}
	}
	for i, t := range sig.anti {
		if !t.required {
			steps = append(steps, relaxStep{relaxPodAntiAffinity, i})
		}
	}
	for i := range sig.prefNode {
		steps = append(steps, relaxStep{relaxNodeAffinity, i})
	}
	for i, t := range sig.spreads {
		if !t.required {
			steps = append(steps, relaxStep{relaxSpread, i})
		}
	}
	if anyPreferNoSchedule {
		steps = append(steps, relaxStep{kind: relaxPreferNoSchedule})
	}
	return steps
}

// sigKey appends the bytes that decide signature equality.
func (c *compiler) sigKey(buf []byte, pod *corev1.Pod) []byte {
	buf = append(buf, pod.Namespace...)
	buf = append(buf, 0)
	buf = appendSortedMap(buf, pod.Labels)
	buf = appendSortedMap(buf, pod.Spec.NodeSelector)
	if pod.Spec.Affinity != nil {
		buf = append(buf, 'A')
		buf = appendProto(buf, pod.Spec.Affinity)
	}
	for i := range pod.Spec.Tolerations {
		buf = append(buf, 'T')
		buf = appendProto(buf, &pod.Spec.Tolerations[i])
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		buf = append(buf, 'S')
		buf = appendProto(buf, &pod.Spec.TopologySpreadConstraints[i])
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			buf = append(buf, 'V')
			buf = append(buf, v.PersistentVolumeClaim.ClaimName...)
			buf = append(buf, 0)
		case v.Ephemeral != nil:
			buf = append(buf, 'E')
			buf = append(buf, pod.Name...)
			buf = append(buf, '-')
			buf = append(buf, v.Name...)
			buf = append(buf, 0)
		}
	}
	for _, p := range podHostPorts(pod) {
		buf = append(buf, 'P')
		buf = fmt.Appendf(buf, "%s/%s/%d", p.ip, p.protocol, p.port)
	}
	return buf
}

type protoMessage interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// appendProto appends the message's protobuf encoding, which Kubernetes
// generates deterministically (map keys sorted).
func appendProto(buf []byte, msg protoMessage) []byte {
	n := msg.Size()
	buf = slices.Grow(buf, n+1)
	start := len(buf)
	buf = buf[:start+n]
	if _, err := msg.MarshalToSizedBuffer(buf[start:]); err != nil {
		// Never expected for in-memory API objects; fall back to the printed form.
		buf = append(buf[:start], fmt.Sprint(msg)...)
	}
	return append(buf, 0)
}

func appendSortedMap(buf []byte, m map[string]string) []byte {
	if len(m) == 0 {
		return append(buf, 0)
	}
	var small [8]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		buf = append(buf, k...)
		buf = append(buf, '=')
		buf = append(buf, m[k]...)
		buf = append(buf, 1)
	}
	return append(buf, 0)
}
