package chart_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// bindChartRolesWithout creates ServiceAccount sa in the release namespace
// with the release's rights except one: verb on group/resource is taken out
// of the core ClusterRole's rule that grants it.
func bindChartRolesWithout(t *testing.T, sa, group, resource, verb string) {
	t.Helper()
	ctx := context.Background()
	core := &rbacv1.ClusterRole{}
	if err := kube.Get(ctx, client.ObjectKey{Name: releaseName + "-core"}, core); err != nil {
		t.Fatalf("reading the chart's core ClusterRole: %v", err)
	}
	removed := false
	var rules []rbacv1.PolicyRule
	for _, r := range core.Rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
			// Keep the rule's other resources and verbs: only this one right goes.
			if others := slices.DeleteFunc(slices.Clone(r.Resources), func(s string) bool { return s == resource }); len(others) > 0 {
				rest := *r.DeepCopy()
				rest.Resources = others
				rules = append(rules, rest)
			}
			if verbs := slices.DeleteFunc(slices.Clone(r.Verbs), func(s string) bool { return s == verb }); len(verbs) > 0 {
				rest := *r.DeepCopy()
				rest.Resources, rest.Verbs = []string{resource}, verbs
				rules = append(rules, rest)
			}
			removed = true
			continue
		}
		rules = append(rules, r)
	}
	if !removed {
		t.Fatalf("the core ClusterRole grants no %s on %s.%s", verb, resource, group)
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: releaseNS}}
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: releaseNS}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: sa + "-core"}, Rules: rules},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa + "-core"}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa + "-core"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: releaseName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa, Namespace: releaseNS}, Subjects: subject,
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: releaseName}},
	}
	for _, obj := range objs {
		create(t, obj)
	}
	t.Cleanup(func() {
		for _, obj := range objs {
			_ = kube.Delete(context.Background(), obj)
		}
	})
}
