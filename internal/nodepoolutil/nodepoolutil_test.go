package nodepoolutil

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func pool(name string, weight *int32) *v1.NodePool {
	return &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodePoolSpec{Weight: weight, Template: v1.NodeClaimTemplate{
		ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"a": "1", "b": "2"}},
		Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpExists}},
			ExpireAfter:  v1.MustParseNillableDuration("720h"),
		},
	}}}
}

func TestTemplateHash(t *testing.T) {
	base := TemplateHash(pool("a", nil))
	cases := map[string]struct {
		mutate    func(*v1.NodePool)
		wantDrift bool
	}{
		"another name and weight": {mutate: func(np *v1.NodePool) { np.Name = "other"; np.Spec.Weight = ptr.To[int32](5) }},
		"requirements changed":    {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.Requirements = nil }},
		"disruption changed":      {mutate: func(np *v1.NodePool) { np.Spec.Disruption.ConsolidationPolicy = v1.ConsolidationPolicyWhenEmpty }},
		"label added":             {mutate: func(np *v1.NodePool) { np.Spec.Template.ObjectMeta.Labels["c"] = "3" }, wantDrift: true},
		"taint added": {mutate: func(np *v1.NodePool) {
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}
		}, wantDrift: true},
		"node class changed":  {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "other" }, wantDrift: true},
		"expireAfter changed": {mutate: func(np *v1.NodePool) { np.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h") }, wantDrift: true},
		"grace period set":    {mutate: func(np *v1.NodePool) { d := v1.NewDuration(3600e9); np.Spec.Template.Spec.TerminationGracePeriod = &d }, wantDrift: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := pool("a", nil)
			tc.mutate(np)
			if drift := TemplateHash(np) != base; drift != tc.wantDrift {
				t.Errorf("hash changed = %v, want %v", drift, tc.wantDrift)
			}
		})
	}
}

// karpenterHashes are NodePool hashes computed by Karpenter itself: a
// throwaway program outside this repository imported
// sigs.k8s.io/karpenter@v1.14.1 (with github.com/mitchellh/hashstructure/v2
// v2.0.2) from the Go module proxy, built the same templates with
// Karpenter's v1 types and printed NodePool.Hash() (NodePoolHashVersion
// "v3"). Only the numbers are kept here.
var karpenterHashes = map[string]struct {
	template v1.NodeClaimTemplate
	want     string
}{
	"empty template": {want: "17307646073972311821"},
	"minimal": {template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: kwokRef(),
		ExpireAfter:  v1.MustParseNillableDuration("720h"),
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}},
	}}, want: "12745407319442031341"},
	"minimal, other requirements (ignored)": {template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: kwokRef(),
		ExpireAfter:  v1.MustParseNillableDuration("720h"),
		Requirements: []v1.NodeSelectorRequirementWithMinValues{{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}}},
	}}, want: "12745407319442031341"},
	"expireAfter Never": {template: v1.NodeClaimTemplate{Spec: v1.NodeClaimTemplateSpec{
		NodeClassRef: kwokRef(),
		ExpireAfter:  v1.MustParseNillableDuration("Never"),
	}}, want: "7428780003907761376"},
	"every hashed field":                   {template: fullTemplate(false), want: "15825252288555628219"},
	"every hashed field, taints reordered": {template: fullTemplate(true), want: "15825252288555628219"},
	"labels": {template: v1.NodeClaimTemplate{
		ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "payments", "tier": "web"}},
		Spec:       v1.NodeClaimTemplateSpec{NodeClassRef: kwokRef(), ExpireAfter: v1.MustParseNillableDuration("720h")},
	}, want: "9800041750691176007"},
	"labels, one changed": {template: v1.NodeClaimTemplate{
		ObjectMeta: v1.ObjectMeta{Labels: map[string]string{"team": "payments", "tier": "api"}},
		Spec:       v1.NodeClaimTemplateSpec{NodeClassRef: kwokRef(), ExpireAfter: v1.MustParseNillableDuration("720h")},
	}, want: "4783711622639046541"},
}

func kwokRef() *v1.NodeClassReference {
	return &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
}

// fullTemplate sets every field Karpenter hashes; reordered swaps the taints.
func fullTemplate(reordered bool) v1.NodeClaimTemplate {
	taints := []corev1.Taint{
		{Key: "dedicated", Value: "payments", Effect: corev1.TaintEffectNoSchedule},
		{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	if reordered {
		taints[0], taints[1] = taints[1], taints[0]
	}
	grace := v1.NewDuration(48 * time.Hour)
	return v1.NodeClaimTemplate{
		ObjectMeta: v1.ObjectMeta{
			Labels:      map[string]string{"team": "payments", "tier": "web"},
			Annotations: map[string]string{"example.com/owner": "sre"},
		},
		Spec: v1.NodeClaimTemplateSpec{
			NodeClassRef:           &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			Taints:                 taints,
			StartupTaints:          []corev1.Taint{{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute}},
			TerminationGracePeriod: &grace,
			ExpireAfter:            v1.MustParseNillableDuration("336h"),
		},
	}
}

// TestTemplateHashMatchesKarpenter checks TemplateHash against hashes
// Karpenter v1.14.1 computed for the same templates.
func TestTemplateHashMatchesKarpenter(t *testing.T) {
	for name, tc := range karpenterHashes {
		t.Run(name, func(t *testing.T) {
			np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.NodePoolSpec{Template: tc.template}}
			if diff := cmp.Diff(tc.want, TemplateHash(np)); diff != "" {
				t.Errorf("hash mismatch (-karpenter +dovetail):\n%s", diff)
			}
		})
	}
}

// TestHashedTypesMatchKarpenter pins what hashstructure sees of the
// template's types: for each struct type (by name, which hashstructure
// hashes) the exported fields not tagged hash:"ignore". These are the names
// in Karpenter v1.14.1's pkg/apis/v1 (nodepool.go, nodeclaim.go,
// duration.go) and metav1.Duration; a field added to Dovetail's API types
// changes the hash of templates that set it, so it must either exist in
// Karpenter too or carry hash:"ignore".
func TestHashedTypesMatchKarpenter(t *testing.T) {
	want := map[string][]string{
		"NodeClaimTemplate":     {"ObjectMeta", "Spec"},
		"ObjectMeta":            {"Labels", "Annotations"},
		"NodeClaimTemplateSpec": {"Taints", "StartupTaints", "NodeClassRef", "TerminationGracePeriod", "ExpireAfter"},
		"NodeClassReference":    {"Kind", "Name", "Group"},
		"NillableDuration":      {"Duration"},
		"Duration":              {"Duration"},
	}
	got := map[string][]string{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[v1.NodePool]().PkgPath() {
			return
		}
		if _, seen := got[typ.Name()]; seen {
			return
		}
		got[typ.Name()] = []string{}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("hash") == "ignore" {
				continue
			}
			got[typ.Name()] = append(got[typ.Name()], f.Name)
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[v1.NodeClaimTemplate]())
	sortStrings := cmpopts.SortSlices(func(a, b string) bool { return a < b })
	if diff := cmp.Diff(want, got, sortStrings); diff != "" {
		t.Errorf("hashed fields differ from Karpenter's (-karpenter +dovetail):\n%s", diff)
	}
}

func TestSortByWeight(t *testing.T) {
	pools := []*v1.NodePool{pool("b", nil), pool("a", nil), pool("heavy", ptr.To[int32](50)), pool("c", ptr.To[int32](10))}
	SortByWeight(pools)
	var names []string
	for _, p := range pools {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"heavy", "c", "a", "b"}, names); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
}

// TestTemplateHashConcurrently: provisioning, the hash controller and the
// drift check hash templates at the same time. Each call must hash alone:
// a hasher shared between calls mixed their inputs, so NodeClaims created
// in parallel got wrong hashes and were marked Drifted during a scale-out.
func TestTemplateHashConcurrently(t *testing.T) {
	pools := []*v1.NodePool{pool("a", nil), pool("b", ptr.To[int32](10))}
	pools[1].Spec.Template.ObjectMeta.Labels["team"] = "b"
	want := []string{TemplateHash(pools[0]), TemplateHash(pools[1])}
	if want[0] == want[1] {
		t.Fatal("the two templates hash alike; the test needs different ones")
	}
	const goroutines, calls = 16, 200
	wrong := make(chan string, goroutines*calls)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				k := (g + i) % 2
				if got := TemplateHash(pools[k]); got != want[k] {
					wrong <- got
				}
			}
		})
	}
	wg.Wait()
	close(wrong)
	n := 0
	for range wrong {
		n++
	}
	if n > 0 {
		t.Errorf("%d of %d concurrent hashes differ from the template's hash", n, goroutines*calls)
	}
}
