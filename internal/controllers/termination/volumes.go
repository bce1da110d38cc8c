package termination

import (
	"context"
	"fmt"
	"time"

	"github.com/dovetail-autoscaler/dovetail/internal/indexes"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/internal/controllers/termination/drain"
)

// pendingVolumeAttachments returns the VolumeAttachments that still bind
// persistent volumes of drained pods to the node. Attachments of pods the
// drain leaves alone (mirror pods, pods tolerating the disrupted taint, pods
// stuck terminating) would never go away, so they do not count, nor do
// attachments of inline volumes, which follow no pod elsewhere.
func pendingVolumeAttachments(ctx context.Context, c client.Reader, node *corev1.Node, now time.Time) ([]*storagev1.VolumeAttachment, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := c.List(ctx, list, client.MatchingFields{indexes.VolumeAttachmentNodeName: node.Name}); err != nil {
		return nil, fmt.Errorf("listing volume attachments of node %q: %w", node.Name, err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	pods, err := podsOn(ctx, c, node.Name)
	if err != nil {
		return nil, err
	}
	ignored := sets.New[string]()
	for _, pod := range pods {
		if drain.IsDrainable(pod, now) {
			continue
		}
		volumes, err := persistentVolumesOf(ctx, c, pod)
		if err != nil {
			return nil, err
		}
		ignored.Insert(volumes...)
	}
	var pending []*storagev1.VolumeAttachment
	for i := range list.Items {
		va := &list.Items[i]
		pv := va.Spec.Source.PersistentVolumeName
		if pv == nil || ignored.Has(*pv) {
			continue
		}
		pending = append(pending, va)
	}
	return pending, nil
}

// persistentVolumesOf returns the names of the persistent volumes bound to
// the pod's claims, including the claims of generic ephemeral volumes.
func persistentVolumesOf(ctx context.Context, c client.Reader, pod *corev1.Pod) ([]string, error) {
	var names []string
	for _, v := range pod.Spec.Volumes {
		var claim string
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = pod.Name + "-" + v.Name
		default:
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: claim}, pvc); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, fmt.Errorf("getting claim %s of pod %s: %w", claim, klog.KObj(pod), err)
		}
		if pvc.Spec.VolumeName != "" {
			names = append(names, pvc.Spec.VolumeName)
		}
	}
	return names, nil
}
