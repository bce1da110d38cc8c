package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider"
)

// TestSuitedTypesFollowTheAMIsAndTheList: the filtered list is reused while
// the class's AMIs and the provider's list are the same, and recomputed when
// either changes.
func TestSuitedTypesFollowTheAMIsAndTheList(t *testing.T) {
	all := catalogTypes(t)
	arch := func(a string) awsv1.AMI {
		return awsv1.AMI{ID: "ami-" + a, Requirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a}}}}
	}
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	nc.Status.AMIs = []awsv1.AMI{arch("amd64")}
	var s suitedTypes
	onlyArch := func(got []*cloudprovider.InstanceType, want string) {
		t.Helper()
		if len(got) == 0 {
			t.Fatal("no types suited")
		}
		for _, it := range got {
			if r, _ := it.Requirements.Get(corev1.LabelArchStable); !r.Has(want) || r.Len() != 1 {
				t.Fatalf("%s (%s) offered with only %s AMIs", it.Name, r, want)
			}
		}
	}
	first := s.get(nc, all)
	onlyArch(first, "amd64")
	if again := s.get(nc, all); !sameList(first, again) {
		t.Error("the same AMIs and list were filtered again")
	}
	nc.Status.AMIs = []awsv1.AMI{arch("arm64")}
	onlyArch(s.get(nc, all), "arm64")
	fresh := catalogTypes(t)
	if got := s.get(nc, fresh); sameList(got, s.get(nc, all)) {
		t.Error("a new list from the provider got the old filtered list")
	}
}
