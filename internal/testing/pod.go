package testing

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWrapper builds a pod.
type PodWrapper struct{ corev1.Pod }

// MakePod returns a pending pod in namespace "default" with one container and no requests.
func MakePod(name string) *PodWrapper {
	p := &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
	}}
	p.UID = types.UID("uid-default-" + name)
	return p
}

// Obj returns a copy of the pod.
func (p *PodWrapper) Obj() *corev1.Pod { return p.Pod.DeepCopy() }

// Replicas returns n copies named <name>-<i>.
func (p *PodWrapper) Replicas(n int) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range n {
		c := p.Pod.DeepCopy()
		c.Name = fmt.Sprintf("%s-%d", p.Name, i)
		c.UID = types.UID(fmt.Sprintf("uid-%s-%s", c.Namespace, c.Name))
		out[i] = c
	}
	return out
}

// Namespace moves the pod to ns.
func (p *PodWrapper) Namespace(ns string) *PodWrapper {
	p.Pod.Namespace = ns
	p.UID = types.UID("uid-" + ns + "-" + p.Name)
	return p
}

// Label sets a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Req adds a request to the main container, for example Req("cpu", "500m").
func (p *PodWrapper) Req(name, qty string) *PodWrapper {
	c := &p.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[corev1.ResourceName(name)] = resource.MustParse(qty)
	return p
}

func list(pairs []string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// Container adds a container with requests given as name, quantity pairs.
func (p *PodWrapper) Container(pairs ...string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: fmt.Sprintf("c%d", len(p.Spec.Containers)), Resources: corev1.ResourceRequirements{Requests: list(pairs)},
	})
	return p
}

// InitContainer adds an init container with requests as name, quantity pairs.
func (p *PodWrapper) InitContainer(pairs ...string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
		Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: list(pairs)},
	})
	return p
}

// Sidecar adds a restartable init container (a sidecar).
func (p *PodWrapper) Sidecar(pairs ...string) *PodWrapper {
	always := corev1.ContainerRestartPolicyAlways
	p.InitContainer(pairs...)
	p.Spec.InitContainers[len(p.Spec.InitContainers)-1].RestartPolicy = &always
	return p
}

// Overhead sets the pod overhead as name, quantity pairs.
func (p *PodWrapper) Overhead(pairs ...string) *PodWrapper {
	p.Spec.Overhead = list(pairs)
	return p
}

// NodeSelector adds a nodeSelector entry.
func (p *PodWrapper) NodeSelector(k, v string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[k] = v
	return p
}

func (p *PodWrapper) nodeAffinity() *corev1.NodeAffinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	return p.Spec.Affinity.NodeAffinity
}

// NodeAffinity adds a requirement to the first required node-affinity term.
func (p *PodWrapper) NodeAffinity(key string, op corev1.NodeSelectorOperator, values ...string) *PodWrapper {
	na := p.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	t := &na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0]
	t.MatchExpressions = append(t.MatchExpressions, corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values})
	return p
}

// NodeAffinityTerm adds a required node-affinity term (terms are ORed).
func (p *PodWrapper) NodeAffinityTerm(reqs ...corev1.NodeSelectorRequirement) *PodWrapper {
	na := p.nodeAffinity()
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return p
}

// PreferredNodeAffinity adds a weighted preferred node-affinity term.
func (p *PodWrapper) PreferredNodeAffinity(weight int32, key string, op corev1.NodeSelectorOperator, values ...string) *PodWrapper {
	na := p.nodeAffinity()
	na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
		Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}},
	})
	return p
}

// Toleration adds a toleration; an empty operator means Equal.
func (p *PodWrapper) Toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return p
}

// SpreadOption tunes a topology spread constraint.
type SpreadOption func(*corev1.TopologySpreadConstraint)

// ScheduleAnyway makes the constraint a preference.
func ScheduleAnyway() SpreadOption {
	return func(t *corev1.TopologySpreadConstraint) { t.WhenUnsatisfiable = corev1.ScheduleAnyway }
}

// MinDomains sets minDomains.
func MinDomains(n int32) SpreadOption {
	return func(t *corev1.TopologySpreadConstraint) { t.MinDomains = &n }
}

// NodeAffinityPolicy sets nodeAffinityPolicy.
func NodeAffinityPolicy(policy corev1.NodeInclusionPolicy) SpreadOption {
	return func(t *corev1.TopologySpreadConstraint) { t.NodeAffinityPolicy = &policy }
}

// NodeTaintsPolicy sets nodeTaintsPolicy.
func NodeTaintsPolicy(policy corev1.NodeInclusionPolicy) SpreadOption {
	return func(t *corev1.TopologySpreadConstraint) { t.NodeTaintsPolicy = &policy }
}

// MatchLabelKeys sets matchLabelKeys.
func MatchLabelKeys(keys ...string) SpreadOption {
	return func(t *corev1.TopologySpreadConstraint) { t.MatchLabelKeys = keys }
}

// Spread adds a DoNotSchedule topology spread constraint over key for pods
// matching selector.
func (p *PodWrapper) Spread(key string, maxSkew int32, selector map[string]string, opts ...SpreadOption) *PodWrapper {
	t := corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
	}
	for _, o := range opts {
		o(&t)
	}
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, t)
	return p
}

// ZoneSpread spreads over topology.kubernetes.io/zone.
func (p *PodWrapper) ZoneSpread(maxSkew int32, selector map[string]string, opts ...SpreadOption) *PodWrapper {
	return p.Spread(corev1.LabelTopologyZone, maxSkew, selector, opts...)
}

// HostnameSpread spreads over kubernetes.io/hostname.
func (p *PodWrapper) HostnameSpread(maxSkew int32, selector map[string]string, opts ...SpreadOption) *PodWrapper {
	return p.Spread(corev1.LabelHostname, maxSkew, selector, opts...)
}

// TermOption tunes a pod (anti-)affinity term.
type TermOption func(*corev1.PodAffinityTerm)

// InNamespaces sets the term's namespaces.
func InNamespaces(ns ...string) TermOption {
	return func(t *corev1.PodAffinityTerm) { t.Namespaces = ns }
}

// NamespaceSelector sets the term's namespace selector (empty: all namespaces).
func NamespaceSelector(match map[string]string) TermOption {
	return func(t *corev1.PodAffinityTerm) { t.NamespaceSelector = &metav1.LabelSelector{MatchLabels: match} }
}

func term(key string, selector map[string]string, opts []TermOption) corev1.PodAffinityTerm {
	t := corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(selector)}}
	for _, o := range opts {
		o(&t)
	}
	return t
}

func (p *PodWrapper) affinity() *corev1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.PodAffinity == nil {
		p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
	}
	if p.Spec.Affinity.PodAntiAffinity == nil {
		p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
	}
	return p.Spec.Affinity
}

// PodAffinity adds a required pod-affinity term.
func (p *PodWrapper) PodAffinity(key string, selector map[string]string, opts ...TermOption) *PodWrapper {
	a := p.affinity().PodAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term(key, selector, opts))
	return p
}

// PodAntiAffinity adds a required pod-anti-affinity term.
func (p *PodWrapper) PodAntiAffinity(key string, selector map[string]string, opts ...TermOption) *PodWrapper {
	a := p.affinity().PodAntiAffinity
	a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, term(key, selector, opts))
	return p
}

// PreferredPodAffinity adds a weighted preferred pod-affinity term.
func (p *PodWrapper) PreferredPodAffinity(weight int32, key string, selector map[string]string, opts ...TermOption) *PodWrapper {
	a := p.affinity().PodAffinity
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, selector, opts)})
	return p
}

// PreferredPodAntiAffinity adds a weighted preferred pod-anti-affinity term.
func (p *PodWrapper) PreferredPodAntiAffinity(weight int32, key string, selector map[string]string, opts ...TermOption) *PodWrapper {
	a := p.affinity().PodAntiAffinity
	a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
		corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term(key, selector, opts)})
	return p
}

// HostPort exposes a TCP host port from the main container.
func (p *PodWrapper) HostPort(port int32) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: corev1.ProtocolTCP})
	return p
}

// PVC mounts a persistent volume claim.
func (p *PodWrapper) PVC(claim string) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
		Name: "v-" + claim, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}},
	})
	return p
}

// EphemeralVolume adds a generic ephemeral volume of the given StorageClass.
func (p *PodWrapper) EphemeralVolume(name, storageClass string) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &storageClass}},
	}}})
	return p
}

// Owner adds a controller owner reference.
func (p *PodWrapper) Owner(kind, name string, uid types.UID) *PodWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, UID: uid, Controller: new(true)})
	return p
}

// NodeName binds the pod.
func (p *PodWrapper) NodeName(n string) *PodWrapper {
	p.Spec.NodeName = n
	return p
}
