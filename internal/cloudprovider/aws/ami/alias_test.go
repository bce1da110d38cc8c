package ami

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

const field = "spec.amiSelectorTerms[0].alias"

func TestAliasParameters(t *testing.T) {
	const eks = "/aws/service/eks/optimized-ami/1.32"
	cases := map[string]struct {
		alias string
		k8s   string
		want  []string
	}{
		"al2023@latest": {alias: "al2023@latest", k8s: "1.32", want: []string{
			eks + "/amazon-linux-2023/x86_64/standard/recommended/image_id",
			eks + "/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
			eks + "/amazon-linux-2023/x86_64/neuron/recommended/image_id",
			eks + "/amazon-linux-2023/arm64/standard/recommended/image_id",
			eks + "/amazon-linux-2023/arm64/nvidia/recommended/image_id",
		}},
		"al2023 pinned, family upper-case": {alias: "AL2023@v20240807", k8s: "1.32", want: []string{
			eks + "/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.32-v20240807/image_id",
			eks + "/amazon-linux-2023/x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-1.32-v20240807/image_id",
			eks + "/amazon-linux-2023/x86_64/neuron/amazon-eks-node-al2023-x86_64-neuron-1.32-v20240807/image_id",
			eks + "/amazon-linux-2023/arm64/standard/amazon-eks-node-al2023-arm64-standard-1.32-v20240807/image_id",
			eks + "/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.32-v20240807/image_id",
		}},
		"al2@latest": {alias: "al2@latest", k8s: "1.32", want: []string{
			eks + "/amazon-linux-2/recommended/image_id",
			eks + "/amazon-linux-2-arm64/recommended/image_id",
			eks + "/amazon-linux-2-gpu/recommended/image_id",
		}},
		"al2 pinned": {alias: "al2@v20240807", k8s: "1.32", want: []string{
			eks + "/amazon-linux-2/amazon-eks-node-1.32-v20240807/image_id",
			eks + "/amazon-linux-2-arm64/amazon-eks-arm64-node-1.32-v20240807/image_id",
			eks + "/amazon-linux-2-gpu/amazon-eks-gpu-node-1.32-v20240807/image_id",
		}},
		"bottlerocket@latest": {alias: "bottlerocket@latest", k8s: "1.33", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33/arm64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/latest/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/arm64/latest/image_id",
		}},
		"bottlerocket pinned, every leading v trimmed": {alias: "bottlerocket@vv1.20.3", k8s: "1.33", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33/arm64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/arm64/1.20.3/image_id",
		}},
		"bottlerocket pinned without v": {alias: "bottlerocket@1.20.3", k8s: "1.33", want: []string{
			"/aws/service/bottlerocket/aws-k8s-1.33/x86_64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33/arm64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/x86_64/1.20.3/image_id",
			"/aws/service/bottlerocket/aws-k8s-1.33-nvidia/arm64/1.20.3/image_id",
		}},
		"windows2019": {alias: "windows2019@latest", k8s: "1.33", want: []string{"/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.33/image_id"}},
		"windows2022": {alias: "windows2022@latest", k8s: "1.33", want: []string{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.33/image_id"}},
		"windows2025": {alias: "windows2025@latest", k8s: "1.35", want: []string{"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAlias(field, tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			params, err := a.Parameters(field, tc.k8s)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range params {
				got = append(got, p.Path)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("paths mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAliasVariants(t *testing.T) {
	gpu := []corev1.NodeSelectorRequirement{{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists}}
	neuron := []corev1.NodeSelectorRequirement{{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists}}
	standard := []corev1.NodeSelectorRequirement{
		{Key: v1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: v1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
	windows := []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}},
		{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{"10.0.20348"}},
	}
	type R = [][]corev1.NodeSelectorRequirement
	cases := map[string]struct {
		alias string
		want  []R
	}{
		"al2023: standard, nvidia, neuron per arch":   {alias: "al2023@latest", want: []R{{standard}, {gpu}, {neuron}, {standard}, {gpu}}},
		"al2: the gpu image serves nvidia and neuron": {alias: "al2@latest", want: []R{{standard}, {standard}, {gpu, neuron}}},
		"bottlerocket: x86_64 also serves neuron":     {alias: "bottlerocket@latest", want: []R{{standard, neuron}, {standard}, {gpu}, {gpu}}},
		"windows: os and build":                       {alias: "windows2022@latest", want: []R{{windows}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAlias(field, tc.alias)
			if err != nil {
				t.Fatal(err)
			}
			params, err := a.Parameters(field, "1.32")
			if err != nil {
				t.Fatal(err)
			}
			var got []R
			for _, p := range params {
				got = append(got, p.Variants)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("variants mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAliasErrors(t *testing.T) {
	cases := map[string]struct {
		alias, k8s string
		want       string
	}{
		"unknown family":              {alias: "ubuntu@latest", k8s: "1.32", want: `spec.amiSelectorTerms[0].alias: unknown AMI family "ubuntu" in "ubuntu@latest" (known: al2, al2023, bottlerocket, windows2019, windows2022, windows2025)`},
		"no @":                        {alias: "al2023", k8s: "1.32", want: `spec.amiSelectorTerms[0].alias: "al2023" is not of the form family@version`},
		"al2023 version format":       {alias: "al2023@1.2.3", k8s: "1.32", want: `spec.amiSelectorTerms[0].alias: version "1.2.3" of "al2023@1.2.3" is neither latest nor a release like v20240625`},
		"bottlerocket version format": {alias: "bottlerocket@v20240625", k8s: "1.32", want: `spec.amiSelectorTerms[0].alias: version "20240625" of "bottlerocket@v20240625" is neither latest nor a release like v1.20.3`},
		"windows pinned":              {alias: "windows2022@v1", k8s: "1.32", want: `spec.amiSelectorTerms[0].alias: "windows2022@v1": Windows aliases only support the version latest`},
		"al2 on 1.33":                 {alias: "al2@latest", k8s: "1.33", want: `spec.amiSelectorTerms[0].alias: AL2 AMIs are not published for Kubernetes 1.33 (1.33 and later); use al2023`},
		"windows2025 before 1.35":     {alias: "windows2025@latest", k8s: "1.34", want: `spec.amiSelectorTerms[0].alias: Windows Server 2025 AMIs need Kubernetes 1.35 or later, the cluster runs 1.34`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := ParseAlias(field, tc.alias)
			if err == nil {
				_, err = a.Parameters(field, tc.k8s)
			}
			if !IsUnsupportedAlias(err) {
				t.Fatalf("error %v is not an UnsupportedAliasError", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("message mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
