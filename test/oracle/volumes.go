package oracle

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations the control plane sets on volumes and claims.
const (
	annBindCompleted = "pv.kubernetes.io/bind-completed"
	annDefaultClass  = "storageclass.kubernetes.io/is-default-class"
)

// volumeObjects returns the problem's namespaces, volumes, claims and
// classes as the scheduler would find them once the control plane has
// processed them: a claim without a class gets the default class (the
// DefaultStorageClass admission plugin), and a claim naming an existing
// volume is bound to it (the persistent-volume controller).
func volumeObjects(pvs []*corev1.PersistentVolume, pvcs []*corev1.PersistentVolumeClaim, scs []*storagev1.StorageClass) []runtime.Object {
	var out []runtime.Object
	defaultClass := ""
	for _, sc := range scs {
		if sc.Annotations[annDefaultClass] == "true" && defaultClass == "" {
			defaultClass = sc.Name
		}
		out = append(out, sc)
	}
	byName := map[string]*corev1.PersistentVolume{}
	for _, pv := range pvs {
		pv = pv.DeepCopy()
		byName[pv.Name] = pv
	}
	for _, pvc := range pvcs {
		pvc = pvc.DeepCopy()
		if pvc.Spec.StorageClassName == nil && defaultClass != "" {
			pvc.Spec.StorageClassName = &defaultClass
		}
		if pv, ok := byName[pvc.Spec.VolumeName]; ok {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[annBindCompleted] = "yes"
			pvc.Status.Phase = corev1.ClaimBound
			if pv.Spec.ClaimRef == nil {
				pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
			}
			if pvc.Spec.StorageClassName != nil {
				pv.Spec.StorageClassName = *pvc.Spec.StorageClassName
			}
			pv.Status.Phase = corev1.VolumeBound
		}
		out = append(out, pvc)
	}
	for _, pv := range pvs {
		out = append(out, byName[pv.Name])
	}
	return out
}
