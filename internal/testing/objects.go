package testing

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// DaemonSetWrapper builds a daemonset from a pod template.
type DaemonSetWrapper struct{ appsv1.DaemonSet }

// MakeDaemonSet returns a daemonset in "kube-system" whose pod template is pod
// (name and namespace are taken from the daemonset).
func MakeDaemonSet(name string, pod *PodWrapper) *DaemonSetWrapper {
	return &DaemonSetWrapper{appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID("uid-ds-" + name)},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: pod.Pod.Labels},
			Spec:       *pod.Spec.DeepCopy(),
		}},
	}}
}

// Obj returns a copy.
func (w *DaemonSetWrapper) Obj() *appsv1.DaemonSet { return w.DaemonSet.DeepCopy() }

// Pod returns a pod of the daemonset bound to node.
func (w *DaemonSetWrapper) Pod(node string) *corev1.Pod {
	p := MakePod(w.Name+"-"+node).Namespace(w.Namespace).Owner("DaemonSet", w.Name, w.UID).NodeName(node).Obj()
	p.Labels = w.Spec.Template.Labels
	p.Spec = *w.Spec.Template.Spec.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// MakeZonalPV returns a persistent volume pinned to zones.
func MakeZonalPV(name string, zones ...string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
			}}},
		}}},
	}
}

// MakePVC returns a claim in "default", bound to volume if it is not empty,
// of storageClass if it is not nil.
func MakePVC(name, volume string, storageClass *string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: volume, StorageClassName: storageClass},
	}
}

// MakeStorageClass returns a WaitForFirstConsumer StorageClass limited to
// zones (any zone when none are given).
func MakeStorageClass(name string, isDefault bool, zones ...string) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "ebs.csi.aws.com", VolumeBindingMode: &mode}
	if isDefault {
		sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	}
	if len(zones) > 0 {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
			{Key: corev1.LabelTopologyZone, Values: zones},
		}}}
	}
	return sc
}

// MakeNamespace returns a namespace with labels.
func MakeNamespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}
