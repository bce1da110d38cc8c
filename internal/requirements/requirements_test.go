package requirements

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func TestCompatible(t *testing.T) {
	pool := NewRequirements(
		In(v1.CapacityTypeLabelKey, "spot", "on-demand"),
		In("karpenter.k8s.aws/instance-category", "g", "p"),
		In("team", "ml"),
	)
	cases := map[string]struct {
		pod     Requirements
		wantErr string
	}{
		"empty pod":                   {pod: Requirements{}},
		"matching custom label":       {pod: FromLabels(map[string]string{"team": "ml"})},
		"conflicting category":        {pod: FromLabels(map[string]string{"karpenter.k8s.aws/instance-category": "c"}), wantErr: "karpenter.k8s.aws/instance-category In [g p] conflicts with karpenter.k8s.aws/instance-category In [c]"},
		"undefined custom label":      {pod: FromLabels(map[string]string{"gpu": "true"}), wantErr: `label "gpu" does not have known values`},
		"undefined custom NotIn":      {pod: NewRequirements(mustNewT(t, "gpu", corev1.NodeSelectorOpNotIn, "true"))},
		"undefined custom DNE":        {pod: NewRequirements(DoesNotExist("gpu"))},
		"undefined well-known label":  {pod: FromLabels(map[string]string{corev1.LabelTopologyZone: "zone-1"})},
		"undefined well-known Exists": {pod: NewRequirements(Exists(corev1.LabelArchStable))},
	}
	opts := CompatibilityOptions{AllowUndefined: IsWellKnown}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := pool.Compatible(tc.pod, opts)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Compatible() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Compatible() = %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

func mustNewT(t *testing.T, key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	t.Helper()
	return mustNew(t, key, op, values...)
}

func TestMatches(t *testing.T) {
	reqs := NewRequirements(
		In("zone", "a", "b"),
		mustNew(t, "cpu", corev1.NodeSelectorOpGt, "3"),
		mustNew(t, "gpu", corev1.NodeSelectorOpNotIn, "true"),
	)
	cases := map[string]struct {
		labels map[string]string
		want   bool
	}{
		"all satisfied":       {labels: map[string]string{"zone": "a", "cpu": "4"}, want: true},
		"NotIn label present": {labels: map[string]string{"zone": "a", "cpu": "4", "gpu": "false"}, want: true},
		"NotIn violated":      {labels: map[string]string{"zone": "a", "cpu": "4", "gpu": "true"}, want: false},
		"missing In label":    {labels: map[string]string{"cpu": "4"}, want: false},
		"Gt violated":         {labels: map[string]string{"zone": "a", "cpu": "3"}, want: false},
		"Gt label missing":    {labels: map[string]string{"zone": "a"}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := reqs.Matches(tc.labels); got != tc.want {
				t.Errorf("Matches(%v) = %v, want %v", tc.labels, got, tc.want)
			}
		})
	}
}

func TestRequirementsIntersect(t *testing.T) {
	a := NewRequirements(In("zone", "a", "b"), In("arch", "amd64"))
	b := NewRequirements(In("zone", "b", "c"), In("os", "linux"))
	got := a.Intersect(b)
	want := "arch In [amd64], os In [linux], zone In [b]"
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("Intersect (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"arch": "amd64", "os": "linux", "zone": "b"}, got.Labels()); diff != "" {
		t.Errorf("Labels (-want +got):\n%s", diff)
	}
	if err := a.Intersects(NewRequirements(In("zone", "c"))); err == nil {
		t.Errorf("Intersects() = nil, want a conflict on zone")
	}
	if got := got.Without("zone", "os").String(); got != "arch In [amd64]" {
		t.Errorf("Without() = %q", got)
	}
}

func TestFromNodePoolRequirements(t *testing.T) {
	cases := map[string]struct {
		in      []v1.NodeSelectorRequirementWithMinValues
		want    string
		wantErr bool
	}{
		"with minValues": {
			in: []v1.NodeSelectorRequirementWithMinValues{
				{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5", "r5"}, MinValues: new(2)},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			},
			want: "karpenter.k8s.aws/instance-family In [c5 m5 r5] (minValues 2), kubernetes.io/arch In [amd64]",
		},
		"same key twice intersects": {
			in: []v1.NodeSelectorRequirementWithMinValues{
				{Key: "k", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}},
				{Key: "k", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}},
			},
			want: "k In [b]",
		},
		"bad minValues": {
			in:      []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: corev1.NodeSelectorOpExists, MinValues: new(0)}},
			wantErr: true,
		},
		"bad operator": {
			in:      []v1.NodeSelectorRequirementWithMinValues{{Key: "k", Operator: "Sometimes"}},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := FromNodePoolRequirements(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got.String()); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestPodRequirements(t *testing.T) {
	term := func(key string, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
	}
	cases := map[string]struct {
		pod     corev1.PodSpec
		want    []string
		wantErr bool
	}{
		"node selector only": {
			pod:  corev1.PodSpec{NodeSelector: map[string]string{"a": "1"}},
			want: []string{"a In [1]"},
		},
		"OR-ed terms": {
			pod: corev1.PodSpec{NodeSelector: map[string]string{"a": "1"}, Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term("zone", "z1"), term("zone", "z2")}},
			}}},
			want: []string{"a In [1], zone In [z1]", "a In [1], zone In [z2]"},
		},
		"match fields": {
			pod: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: NodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}},
				}}},
			}}},
			want: []string{"metadata.name In [node-1]"},
		},
		"only empty term": {
			pod: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}},
			}}},
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			alts, err := PodRequirements(&corev1.Pod{Spec: tc.pod})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tc.wantErr)
			}
			var got []string
			for _, a := range alts {
				got = append(got, a.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodPreferencesHeaviestFirst(t *testing.T) {
	pref := func(w int32, v string) corev1.PreferredSchedulingTerm {
		return corev1.PreferredSchedulingTerm{Weight: w, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{v}}}}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{pref(1, "a"), pref(50, "b"), pref(1, "c")},
	}}}}
	prefs, err := PodPreferences(pod)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range prefs {
		got = append(got, p.Requirements.String())
	}
	if diff := cmp.Diff([]string{"zone In [b]", "zone In [a]", "zone In [c]"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
