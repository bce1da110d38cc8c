package podmetrics_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	podmetrics "github.com/dovetail-autoscaler/dovetail/internal/controllers/metrics/pod"
	"github.com/dovetail-autoscaler/dovetail/internal/metrics"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// TestPodsStateFollowsThePod: a pod bound to a NodePool's node has one
// series with the node's labels and the pod's phase; a phase change
// replaces it (never two series for one pod); deleting the pod removes it.
func TestPodsStateFollowsThePod(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	testEnv.StartManager(t, func(mgr manager.Manager) error {
		return podmetrics.NewController(mgr.GetClient(), m).Register(ctx, mgr)
	})

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "podmetrics-node", Labels: map[string]string{
		v1.NodePoolLabelKey: "general", corev1.LabelTopologyZone: "zone-b", corev1.LabelArchStable: "arm64",
		v1.CapacityTypeLabelKey: v1.CapacityTypeSpot, corev1.LabelInstanceTypeStable: "m7g.large",
	}}}
	if err := testEnv.Client.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, node) })
	ns := testEnv.Namespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-0"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{
			Name: "pause", Image: env.PauseImage,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}
	if err := testEnv.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	want := func(phase corev1.PodPhase) []string {
		return []string{fmt.Sprintf("name=web-0 namespace=%s owner= node=%s nodepool=general zone=zone-b arch=arm64 capacity_type=spot instance_type=m7g.large phase=%s", ns, node.Name, phase)}
	}
	waitForSeries(t, reg, ns, want(corev1.PodPending))

	stored := pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	if err := testEnv.Client.Status().Patch(ctx, pod, client.MergeFrom(stored)); err != nil {
		t.Fatal(err)
	}
	waitForSeries(t, reg, ns, want(corev1.PodRunning))

	if err := testEnv.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	waitForSeries(t, reg, ns, nil)
}

// waitForSeries waits until the karpenter_pods_state series of namespace
// ns are exactly want, each written as "label=value ..." in the gauge's
// label order.
func waitForSeries(t *testing.T, reg *prometheus.Registry, ns string, want []string) {
	t.Helper()
	var got []string
	env.Eventually(t, 30*time.Second, fmt.Sprintf("karpenter_pods_state series %q", want), func(context.Context) (bool, error) {
		families, err := reg.Gather()
		if err != nil {
			return false, err
		}
		got = got[:0]
		for _, family := range families {
			if family.GetName() != "karpenter_pods_state" {
				continue
			}
			for _, metric := range family.GetMetric() {
				values := map[string]string{}
				for _, pair := range metric.GetLabel() {
					values[pair.GetName()] = pair.GetValue()
				}
				if values["namespace"] != ns {
					continue
				}
				var parts []string
				for _, name := range []string{"name", "namespace", "owner", "node", "nodepool", "zone", "arch", "capacity_type", "instance_type", "phase"} {
					parts = append(parts, name+"="+values[name])
				}
				got = append(got, strings.Join(parts, " "))
			}
		}
		return slices.Equal(got, want), nil
	})
}
