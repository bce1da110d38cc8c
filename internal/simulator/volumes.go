package simulator

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-autoscaler/dovetail/internal/requirements"
)

// Annotations that mark the default StorageClass.
const (
	defaultStorageClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaDefaultStorageClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

func (m *Model) indexVolumes(s *Snapshot) {
	m.pvs = map[string]*corev1.PersistentVolume{}
	for _, pv := range s.PersistentVolumes {
		if pv != nil {
			m.pvs[pv.Name] = pv
		}
	}
	m.pvcs = map[string]*corev1.PersistentVolumeClaim{}
	for _, pvc := range s.PersistentVolumeClaims {
		if pvc != nil {
			m.pvcs[pvc.Namespace+"/"+pvc.Name] = pvc
		}
	}
	m.scs = nil
	var defaults []string
	for _, sc := range s.StorageClasses {
		if sc == nil {
			continue
		}
		if m.scs == nil {
			m.scs = map[string]*storageClass{}
		}
		m.scs[sc.Name] = &storageClass{name: sc.Name, topologies: sc.AllowedTopologies}
		if sc.Annotations[defaultStorageClassAnnotation] == "true" || sc.Annotations[betaDefaultStorageClassAnnotation] == "true" {
			defaults = append(defaults, sc.Name)
		}
	}
	if len(defaults) > 0 {
		slices.Sort(defaults)
		m.defaultSC = defaults[0]
	}
}

// volumeRequirements returns the node requirements a pod's volumes impose,
// as alternatives (the cross product of each volume's OR-ed topology terms),
// and a description of the volumes involved. Zonal persistent volumes
// constrain by their node affinity; unbound claims by their StorageClass's
// allowedTopologies. No alternatives means no constraint.
func (m *Model) volumeRequirements(pod *corev1.Pod) ([]requirements.Requirements, string, error) {
	var perVolume [][]requirements.Requirements
	var srcs []string
	var errs []error
	for _, v := range pod.Spec.Volumes {
		alts, src, err := m.volumeTopology(pod, v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if alts != nil {
			perVolume = append(perVolume, alts)
			srcs = append(srcs, src)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	if len(perVolume) == 0 {
		return nil, "", nil
	}
	product := []requirements.Requirements{{}}
	for _, alts := range perVolume {
		var next []requirements.Requirements
		for _, acc := range product {
			for _, alt := range alts {
				if len(next) < maxAlternatives {
					next = append(next, acc.Intersect(alt))
				}
			}
		}
		product = next
	}
	return product, strings.Join(srcs, ", "), nil
}

func (m *Model) volumeTopology(pod *corev1.Pod, v corev1.Volume) ([]requirements.Requirements, string, error) {
	var claimName string
	var templateClass *string
	switch {
	case v.PersistentVolumeClaim != nil:
		claimName = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		claimName = pod.Name + "-" + v.Name
		if t := v.Ephemeral.VolumeClaimTemplate; t != nil {
			templateClass = t.Spec.StorageClassName
		}
	default:
		return nil, "", nil
	}
	pvc, ok := m.pvcs[pod.Namespace+"/"+claimName]
	if !ok && v.PersistentVolumeClaim != nil {
		return nil, "", fmt.Errorf("persistentvolumeclaim %s/%s not found", pod.Namespace, claimName)
	}
	if ok && pvc.Spec.VolumeName != "" {
		pv, found := m.pvs[pvc.Spec.VolumeName]
		if !found {
			return nil, "", fmt.Errorf("persistentvolume %s bound to claim %s/%s not found", pvc.Spec.VolumeName, pod.Namespace, claimName)
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			return nil, "", nil
		}
		var alts []requirements.Requirements
		for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
			reqs, err := requirements.FromNodeSelectorTerm(term)
			if err != nil {
				return nil, "", fmt.Errorf("persistentvolume %s node affinity: %w", pv.Name, err)
			}
			alts = append(alts, reqs)
		}
		if len(alts) == 0 {
			return nil, "", fmt.Errorf("persistentvolume %s node affinity has no terms", pv.Name)
		}
		return alts, "persistentvolume " + pv.Name, nil
	}
	class := templateClass
	if ok {
		class = pvc.Spec.StorageClassName
	}
	name := m.defaultSC
	if class != nil {
		name = *class
	}
	if name == "" {
		return nil, "", nil
	}
	sc, found := m.scs[name]
	if !found {
		return nil, "", fmt.Errorf("storageclass %s of claim %s/%s not found", name, pod.Namespace, claimName)
	}
	if len(sc.topologies) == 0 {
		return nil, "", nil
	}
	var alts []requirements.Requirements
	for _, term := range sc.topologies {
		var rs []requirements.Requirement
		for _, e := range term.MatchLabelExpressions {
			r, err := requirements.New(e.Key, corev1.NodeSelectorOpIn, e.Values...)
			if err != nil {
				return nil, "", fmt.Errorf("storageclass %s allowedTopologies: %w", sc.name, err)
			}
			rs = append(rs, r)
		}
		alts = append(alts, requirements.NewRequirements(rs...))
	}
	return alts, "storageclass " + sc.name, nil
}
