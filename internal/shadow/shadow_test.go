package shadow

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func TestIsShadowFailsSafe(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		shadow      bool
		invalid     bool
	}{
		"not annotated":  {},
		"true":           {annotations: map[string]string{AnnotationKey: "true"}, shadow: true},
		"false":          {annotations: map[string]string{AnnotationKey: "false"}},
		"mistyped":       {annotations: map[string]string{AnnotationKey: "yes"}, shadow: true, invalid: true},
		"empty":          {annotations: map[string]string{AnnotationKey: ""}, shadow: true, invalid: true},
		"other key only": {annotations: map[string]string{"example.com/shadow": "true"}},
	}
	for name, tc := range cases {
		np := &v1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "pool", Annotations: tc.annotations}}
		if got := IsShadow(np); got != tc.shadow {
			t.Errorf("%s: IsShadow = %v, want %v", name, got, tc.shadow)
		}
		msg, invalid := InvalidAnnotation(np)
		if invalid != tc.invalid || (invalid && !strings.Contains(msg, AnnotationKey)) {
			t.Errorf("%s: InvalidAnnotation = %q, %v; want invalid %v, naming the annotation", name, msg, invalid, tc.invalid)
		}
	}
	if IsShadow(nil) {
		t.Error("IsShadow(nil) = true")
	}
}
