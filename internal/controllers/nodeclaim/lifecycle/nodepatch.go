package lifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jsonPatchOp is one RFC 6902 operation.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// registrationPatch is the JSON patch (RFC 6902) that turns stored into node
// by naming only what registration changes: labels and annotations by key,
// finalizers and owner references appended, taints removed by index (each
// removal guarded by a test that the index still holds that taint) and
// appended. Unlike a merge patch under an optimistic lock, it applies on
// top of what the kubelet or kwok wrote meanwhile (status, heartbeats, other
// labels, appended taints) instead of conflicting with it; unlike a
// strategic merge patch, which replaces spec.taints whole (the list is
// atomic), it loses no taint changed concurrently: a concurrent removal
// moves the indices, fails a test, and the registration is retried on the
// newer Node.
func registrationPatch(stored, node *corev1.Node) (client.Patch, error) {
	var ops []jsonPatchOp
	ops = append(ops, mapOps("/metadata/labels", stored.Labels, node.Labels)...)
	ops = append(ops, mapOps("/metadata/annotations", stored.Annotations, node.Annotations)...)
	ops = append(ops, listOps("/metadata/finalizers", stored.Finalizers, node.Finalizers,
		func(a, b string) bool { return a == b })...)
	ops = append(ops, listOps("/metadata/ownerReferences", stored.OwnerReferences, node.OwnerReferences,
		func(a, b metav1.OwnerReference) bool { return a.UID == b.UID })...)
	ops = append(ops, listOps("/spec/taints", stored.Spec.Taints, node.Spec.Taints,
		func(a, b corev1.Taint) bool { return a.MatchTaint(&b) })...)
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding registration patch: %w", err)
	}
	return client.RawPatch(types.JSONPatchType, data), nil
}

// mapOps sets the keys of want that have differs from, and removes those
// want lacks (registration only adds, but the helper stays general).
func mapOps(path string, have, want map[string]string) []jsonPatchOp {
	if len(have) == 0 {
		if len(want) == 0 {
			return nil
		}
		return []jsonPatchOp{{Op: "add", Path: path, Value: want}}
	}
	var ops []jsonPatchOp
	for _, k := range sortedKeys(want) {
		if v, ok := have[k]; !ok || v != want[k] {
			ops = append(ops, jsonPatchOp{Op: "add", Path: path + "/" + escapePointer(k), Value: want[k]})
		}
	}
	for _, k := range sortedKeys(have) {
		if _, ok := want[k]; !ok {
			ops = append(ops, jsonPatchOp{Op: "remove", Path: path + "/" + escapePointer(k)})
		}
	}
	return ops
}

// listOps removes the items of have that want lacks (by index, from the
// end, each after a test that the index still holds it) and appends the
// items of want that have lacks.
func listOps[T any](path string, have, want []T, same func(a, b T) bool) []jsonPatchOp {
	var ops []jsonPatchOp
	kept := 0
	for i := len(have) - 1; i >= 0; i-- {
		if slices.ContainsFunc(want, func(w T) bool { return same(have[i], w) }) {
			kept++
			continue
		}
		item := fmt.Sprintf("%s/%d", path, i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: item, Value: have[i]}, jsonPatchOp{Op: "remove", Path: item})
	}
	var added []T
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h T) bool { return same(h, w) }) {
			added = append(added, w)
		}
	}
	if len(added) == 0 {
		return ops
	}
	if len(have) == 0 {
		// The list is absent (or empty): create it.
		return append(ops, jsonPatchOp{Op: "add", Path: path, Value: added})
	}
	for _, w := range added {
		ops = append(ops, jsonPatchOp{Op: "add", Path: path + "/-", Value: w})
	}
	return ops
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// escapePointer escapes a map key for a JSON pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
