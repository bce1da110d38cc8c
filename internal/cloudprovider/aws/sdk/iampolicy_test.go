package sdk_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// TestIAMPolicyAllowsEveryCall: docs/iam-policy.json, the policy the README
// tells users to attach to the controller's role, allows every AWS call the
// provider can make (each method of the sdk interfaces), and CreateFleet's
// implied ec2:RunInstances and the node role's iam:PassRole.
func TestIAMPolicyAllowsEveryCall(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "docs", "iam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Effect string
			Action any
		}
	}
	if err := json.Unmarshal(data, &policy); err != nil {
		t.Fatalf("docs/iam-policy.json: %v", err)
	}
	allowed := map[string]bool{}
	for _, s := range policy.Statement {
		if s.Effect != "Allow" {
			continue
		}
		switch a := s.Action.(type) {
		case string:
			allowed[a] = true
		case []any:
			for _, v := range a {
				allowed[v.(string)] = true
			}
		}
	}
	want := []string{"ec2:RunInstances", "iam:PassRole"}
	for prefix, iface := range map[string]reflect.Type{
		"ec2": reflect.TypeFor[sdk.EC2](), "iam": reflect.TypeFor[sdk.IAM](), "ssm": reflect.TypeFor[sdk.SSM](),
		"pricing": reflect.TypeFor[sdk.Pricing](), "sqs": reflect.TypeFor[sdk.SQS](), "eks": reflect.TypeFor[sdk.EKS](),
	} {
		for i := range iface.NumMethod() {
			want = append(want, prefix+":"+iface.Method(i).Name)
		}
	}
	var missing []string
	for _, action := range want {
		if !allowed[action] {
			missing = append(missing, action)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/iam-policy.json does not allow: %s", strings.Join(missing, ", "))
	}
}
