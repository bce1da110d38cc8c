package termination_test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/fake"
)

// nodePool is the NodePool label of every test node and claim.
const nodePool = "default"

// nodeClaimWrapper builds NodeClaims fluently.
type nodeClaimWrapper struct{ v1.NodeClaim }

// makeNodeClaim starts a NodeClaim with the termination finalizer, named
// uniquely for the test.
func (h *harness) makeNodeClaim(name string) *nodeClaimWrapper {
	gvk := fake.NodeClassGVK()
	return &nodeClaimWrapper{v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:       h.ns + "-" + name,
			Labels:     map[string]string{testLabel: h.ns, v1.NodePoolLabelKey: nodePool},
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: v1.NodeClaimSpec{NodeClaimTemplateSpec: v1.NodeClaimTemplateSpec{
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{
				Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"},
			}},
			NodeClassRef: &v1.NodeClassReference{Group: gvk.Group, Kind: gvk.Kind, Name: "default"},
		}},
	}}
}

func (w *nodeClaimWrapper) terminationGracePeriod(d time.Duration) *nodeClaimWrapper {
	w.Spec.TerminationGracePeriod = ptr.To(v1.NewDuration(d))
	return w
}

func (w *nodeClaimWrapper) obj() *v1.NodeClaim { return &w.NodeClaim }

// nodeWrapper builds Nodes fluently.
type nodeWrapper struct{ corev1.Node }

// makeNode starts the Node of a launched NodeClaim, with the termination
// finalizer, as registration leaves it.
func (h *harness) makeNode(nodeClaim *v1.NodeClaim) *nodeWrapper {
	return &nodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       nodeClaim.Name,
			Labels:     map[string]string{testLabel: h.ns, v1.NodePoolLabelKey: nodePool},
			Finalizers: []string{v1.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: nodeClaim.Status.ProviderID},
	}}
}

func (w *nodeWrapper) obj() *corev1.Node { return &w.Node }

// podWrapper builds Pods fluently.
type podWrapper struct{ corev1.Pod }

// makePod starts a pod bound to the node.
func (h *harness) makePod(name, nodeName string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{}},
		Spec: corev1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers:                    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
	}}
}

func (w *podWrapper) label(key, value string) *podWrapper {
	w.Labels[key] = value
	return w
}

func (w *podWrapper) grace(d time.Duration) *podWrapper {
	w.Spec.TerminationGracePeriodSeconds = ptr.To(int64(d / time.Second))
	return w
}

// ownedBy adds an owner reference; nothing checks that the owner exists
// (no garbage collector runs).
func (w *podWrapper) ownedBy(apiVersion, kind, name string) *podWrapper {
	w.OwnerReferences = append(w.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: "00000000-0000-0000-0000-000000000001",
	})
	return w
}

func (w *podWrapper) daemon() *podWrapper { return w.ownedBy("apps/v1", "DaemonSet", "ds") }

func (w *podWrapper) priorityClass(name string) *podWrapper {
	w.Spec.PriorityClassName = name
	return w
}

func (w *podWrapper) annotate(key, value string) *podWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

func (w *podWrapper) tolerate(t corev1.Toleration) *podWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, t)
	return w
}

func (w *podWrapper) claim(volume, claimName string) *podWrapper {
	w.Spec.Volumes = append(w.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName},
	}})
	return w
}

func (w *podWrapper) obj() *corev1.Pod { return &w.Pod }

// makePDB returns a PDB with minAvailable over the pods labelled app=<app>.
func (h *harness) makePDB(name, app string, minAvailable int) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(int32(minAvailable))),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// makeVolume returns a persistent volume, a claim bound to it and the
// attachment of the volume to the node, as the attach/detach controller
// would have made them.
func (h *harness) makeVolume(name, nodeName string) (*corev1.PersistentVolume, *corev1.PersistentVolumeClaim, *storagev1.VolumeAttachment) {
	pvName := h.ns + "-" + name
	size := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{testLabel: h.ns}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: "csi.dovetail.test", VolumeHandle: pvName,
			}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
			VolumeName:  pvName,
		},
	}
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{testLabel: h.ns}},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.dovetail.test", NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pvName)},
		},
	}
	return pv, pvc, va
}
