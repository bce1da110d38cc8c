package conversion_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

// edit changes an object the same way at either version: the paths it
// touches are spelled alike in v1beta1 and v1.
type edit func(t *testing.T, obj *unstructured.Unstructured)

// setField returns an edit that sets a dotted path (no list indexes) to value.
func setField(path string, value any) edit {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		if err := unstructured.SetNestedField(obj.Object, runtimeValue(value), strings.Split(path, ".")...); err != nil {
			t.Fatalf("setting %s: %v", path, err)
		}
	}
}

// runtimeValue converts Go values to what unstructured holds (int64 for
// integers, []any for lists).
func runtimeValue(v any) any {
	switch v := v.(type) {
	case int:
		return int64(v)
	case []string:
		out := make([]any, len(v))
		for i, s := range v {
			out[i] = s
		}
		return out
	}
	return v
}

// setAnnotation returns an edit that sets an annotation.
func setAnnotation(key, value string) edit {
	return func(_ *testing.T, obj *unstructured.Unstructured) {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[key] = value
		obj.SetAnnotations(annotations)
	}
}

// edits applies several edits in order.
func edits(es ...edit) edit {
	return func(t *testing.T, obj *unstructured.Unstructured) {
		t.Helper()
		for _, e := range es {
			e(t, obj)
		}
	}
}

// TestWritesThroughTheOtherVersionLoseNothing creates an object through
// one version, reads it through the other, changes something there and
// writes it back (as a client of the other version does), then reads it
// through the first version: it must be what was created plus the change,
// values the other version cannot hold included. A write through v1beta1
// of an object created as v1 keeps terminationGracePeriod, budget reasons,
// a consolidateAfter v1beta1 forbids, EC2NodeClass kubelet and capacity
// reservations, NodeClaim expireAfter and status; a write through v1 of a
// v1beta1 object keeps its kubelet block, unqualified nodeClassRef and
// Ubuntu family.
func TestWritesThroughTheOtherVersionLoseNothing(t *testing.T) {
	serveConversions(t)
	cases := map[string]struct {
		manifest string
		// status, if any, is written through the status subresource of the
		// creating version.
		status string
		// change is made through the other version; onStatus makes it with
		// a status write.
		change   edit
		onStatus bool
		// want is what the creating version reads afterwards, from what was
		// written; change applied to it when nil.
		want edit
		// wantBack is what the other version reads back, from what it wrote;
		// the same when nil.
		wantBack edit
	}{
		"v1 NodePool, spec written through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: kubernetes.io/arch, operator: In, values: [arm64]}]
      expireAfter: 336h
      terminationGracePeriod: 48h
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 5m
    budgets:
    - {nodes: "10%", reasons: [Underutilized, Empty]}
    - {nodes: "0", schedule: "@daily", duration: 10m, reasons: [Drifted]}`,
			status: `{resources: {cpu: "4", nodes: "2"}, nodes: 2}`,
			change: edits(setField("spec.weight", 20), setField("metadata.labels.team", "a")),
		},
		"static v1 NodePool, written through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  replicas: 3
  limits: {nodes: "5"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: 720h`,
			status: `{resources: {nodes: "3"}, nodes: 3}`,
			change: setField("metadata.labels.team", "static"),
		},
		"v1 NodePool in the v1 document's spelling, written through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: Never
  disruption:
    consolidationPolicy: WhenUnderutilized
    consolidateAfter: 0s
    budgets: [{nodes: "1", reasons: [Expired]}]`,
			change: setField("metadata.annotations.note", "edited"),
		},
		"v1 NodePool, budgets edited through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodePool
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: []
      expireAfter: 720h
      terminationGracePeriod: 1h
  disruption:
    consolidateAfter: 0s
    budgets: [{nodes: "10%", reasons: [Drifted]}]`,
			change: setField("spec.disruption.budgets", []any{map[string]any{"nodes": "3"}}),
			// The v1beta1 client's budgets win: they apply to every reason
			// (docs/migration.md); terminationGracePeriod stays, and the kept
			// v1 disruption block, now stale, is gone from v1-fields.
			want:     setField("spec.disruption.budgets", []any{map[string]any{"nodes": "3"}}),
			wantBack: setAnnotation(conversion.V1FieldsAnnotationKey, `{"terminationGracePeriod":"1h"}`),
		},
		"v1 NodeClaim, metadata written through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {labels: {karpenter.sh/nodepool: no-such-pool}}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
  expireAfter: 48h
  terminationGracePeriod: 1h`,
			status: `{lastPodEventTime: "2024-02-02T19:54:34Z", nodeName: node-a}`,
			change: setField("metadata.labels.team", "a"),
		},
		"v1 NodeClaim, status written through v1beta1": {
			manifest: `
apiVersion: karpenter.sh/v1
kind: NodeClaim
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements: []
  expireAfter: 48h
  terminationGracePeriod: 1h`,
			status:   `{lastPodEventTime: "2024-02-02T19:54:34Z"}`,
			change:   setField("status.providerID", "aws:///us-west-2a/i-0123456789abcdef0"),
			onStatus: true,
		},
		"v1 EC2NodeClass, written through v1beta1": {
			manifest: `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
spec:
  amiSelectorTerms: [{alias: al2023@v20240625}]
  role: node-role
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]
  capacityReservationSelectorTerms: [{id: cr-0123456789abcdef0}]
  kubelet: {maxPods: 42, clusterDNS: [10.0.0.10]}`,
			change: setField("spec.tags.team", "a"),
		},
		"v1 EC2NodeClass with an SSM parameter, written through v1beta1": {
			manifest: `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{ssmParameter: /my/ami}, {tags: {team: a}}]
  role: node-role
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]`,
			change: setField("spec.tags.team", "a"),
		},
		"v1beta1 NodePool, written through v1": {
			manifest: `
apiVersion: karpenter.sh/v1beta1
kind: NodePool
spec:
  weight: 10
  template:
    spec:
      nodeClassRef: {name: default}
      requirements: []
      kubelet: {maxPods: 20, evictionSoftGracePeriod: {memory.available: 1m}, evictionSoft: {memory.available: 500Mi}}
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: 720h
    budgets: [{nodes: "10%"}]`,
			change: setField("spec.weight", 30),
		},
		"v1beta1 NodeClaim, written through v1": {
			manifest: `
apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
spec:
  nodeClassRef: {name: default, kind: EC2NodeClass}
  requirements: []
  kubelet: {maxPods: 20}`,
			change: setField("metadata.labels.team", "a"),
		},
		"v1beta1 Ubuntu EC2NodeClass, written through v1": {
			manifest: `
apiVersion: karpenter.k8s.aws/v1beta1
kind: EC2NodeClass
spec:
  amiFamily: Ubuntu
  role: node-role
  subnetSelectorTerms: [{id: subnet-1}]
  securityGroupSelectorTerms: [{id: sg-1}]`,
			change: setField("spec.tags.team", "a"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.manifest)
			obj.SetName("write-" + dnsLabel(name))
			if tc.status != "" {
				obj.Object["status"] = object(t, tc.status).Object
			}
			gvk := obj.GroupVersionKind()
			other := map[string]string{"v1": "v1beta1", "v1beta1": "v1"}[gvk.Version]
			written := createWithStatus(t, obj)

			// The other version's client reads, changes and writes.
			read := get(t, gvk.Kind, obj.GetName(), other)
			tc.change(t, read)
			c := dyn(t, gvk.Kind, other)
			var err error
			if tc.onStatus {
				_, err = c.UpdateStatus(context.Background(), read, metav1.UpdateOptions{})
			} else {
				_, err = c.Update(context.Background(), read, metav1.UpdateOptions{})
			}
			if err != nil {
				t.Fatalf("writing through %s: %v", other, err)
			}

			// The first version sees what it wrote, plus the change.
			want := written.DeepCopy()
			if tc.want != nil {
				tc.want(t, want)
			} else {
				tc.change(t, want)
			}
			expectSame(t, "read through "+gvk.Version+" after a write through "+other, defaulted(t, want), get(t, gvk.Kind, obj.GetName(), gvk.Version))
			// The other version's client reads back what it wrote.
			if tc.wantBack != nil {
				tc.wantBack(t, read)
			}
			expectSame(t, "read back through "+other, defaulted(t, read), get(t, gvk.Kind, obj.GetName(), other))
		})
	}
}
