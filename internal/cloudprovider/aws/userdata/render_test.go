package userdata

import (
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the rendered output")

// baseOptions returns the options of a typical node; tests change fields.
func baseOptions(family string) Options {
	return Options{
		Family:          family,
		ClusterName:     "test-cluster",
		ClusterEndpoint: "https://test-cluster",
		CABundle:        base64.StdEncoding.EncodeToString([]byte("ca-bundle\n")),
		ClusterCIDR:     "10.100.0.0/16",
		ClusterDNS:      []string{"10.0.100.10"},
		Kubelet:         &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](110)},
		Labels: map[string]string{
			"karpenter.sh/nodepool":              "default",
			"karpenter.k8s.aws/ec2nodeclass":     "default",
			"kubernetes.io/arch":                 "amd64",
			"node.kubernetes.io/instance-type":   "m5.large",
			"topology.kubernetes.io/zone":        "us-west-2a",
			"node-restriction.kubernetes.io/foo": "bar",
			"k8s.io/bar":                         "baz",
			"team":                               "a",
			"example.com/owner":                  "b",
		},
		Taints:       []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
		CapacityType: "on-demand",
	}
}

func fullKubelet() *awsv1.KubeletConfiguration {
	return &awsv1.KubeletConfiguration{
		MaxPods:                     ptr.To[int32](58),
		PodsPerCore:                 ptr.To[int32](2),
		SystemReserved:              map[string]string{"memory": "100Mi", "cpu": "100m"},
		KubeReserved:                map[string]string{"ephemeral-storage": "1Gi", "cpu": "200m"},
		EvictionHard:                map[string]string{"nodefs.available": "10%", "memory.available": "5%"},
		EvictionSoft:                map[string]string{"memory.available": "10%", "nodefs.available": "15%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}, "nodefs.available": {Duration: 2 * time.Minute}},
		EvictionMaxPodGracePeriod:   ptr.To[int32](60),
		ImageGCHighThresholdPercent: ptr.To[int32](85),
		ImageGCLowThresholdPercent:  ptr.To[int32](80),
		CPUCFSQuota:                 ptr.To(false),
	}
}

func with(o Options, f func(*Options)) Options {
	f(&o)
	return o
}

const (
	shellUserData = "#!/bin/bash\necho \"Running custom user data script\"\n"
	mimeUserData  = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\r\n\r\n" +
		"--BOUNDARY\r\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\r\nContent-Transfer-Encoding: 7bit\r\n\r\n" +
		"#!/bin/bash\necho \"first part\"\r\n" +
		"--BOUNDARY\r\nContent-Type: application/node.eks.aws\r\n\r\n" +
		"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n      shutdownGracePeriod: 30s\n\r\n" +
		"--BOUNDARY--\r\n"
	nodeConfigUserData   = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      shutdownGracePeriod: 30s\n    flags:\n    - --v=4\n"
	bottlerocketUserData = `extra-top-level = "dropped"

[settings.kubernetes]
cluster-name = "user-cluster"
max-pods = 42
unknown-setting = "dropped"
cloud-provider = "external"

[settings.kubernetes.node-labels]
custom-node-label = "custom"
"karpenter.sh/capacity-type" = "spot"

[settings.kubernetes.node-taints]
user-taint = ["lost:NoSchedule"]

[settings.kubernetes.labels]
dropped = "yes"

[settings.kubernetes.eviction-hard]
"memory.available" = "12%"

[settings.network]
hostname = "test.local"
no-proxy = ["localhost", "127.0.0.1"]

[settings.ntp]
time-servers = ["169.254.169.123"]

[settings.bootstrap-commands.100-user]
commands = [["echo", "hi"]]
mode = "once"
essential = false
`
	windowsUserData = "Write-Host \"Running custom user data script\""
)

func goldenCases() map[string]Options {
	raid0 := ptr.To(awsv1.InstanceStorePolicyRAID0)
	ipv6 := func(o *Options) { o.ClusterDNS = []string{"fd01:5bc6:a2e4::a", "fd01:5bc6:a2e4::b"} }
	cases := map[string]Options{}
	for _, fam := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023} {
		cases[fam+"_default"] = baseOptions(fam)
		cases[fam+"_shell"] = with(baseOptions(fam), func(o *Options) { o.CustomUserData = ptr.To(shellUserData) })
		cases[fam+"_mime"] = with(baseOptions(fam), func(o *Options) { o.CustomUserData = ptr.To(mimeUserData) })
		cases[fam+"_kubelet"] = with(baseOptions(fam), func(o *Options) { o.Kubelet = fullKubelet() })
		cases[fam+"_raid0"] = with(baseOptions(fam), func(o *Options) { o.InstanceStorePolicy = raid0 })
		cases[fam+"_ipv6"] = with(baseOptions(fam), ipv6)
	}
	cases["AL2023_nodeconfig"] = with(baseOptions(awsv1.AMIFamilyAL2023), func(o *Options) { o.CustomUserData = ptr.To(nodeConfigUserData) })
	cases["AL2023_kubelet_dns"] = with(baseOptions(awsv1.AMIFamilyAL2023), func(o *Options) {
		o.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr.To[int32](29), ClusterDNS: []string{"10.0.0.53", "10.0.0.54"}}
	})
	br := awsv1.AMIFamilyBottlerocket
	cases["Bottlerocket_default"] = baseOptions(br)
	cases["Bottlerocket_merged"] = with(baseOptions(br), func(o *Options) { o.CustomUserData = ptr.To(bottlerocketUserData) })
	cases["Bottlerocket_kubelet"] = with(baseOptions(br), func(o *Options) { o.Kubelet = fullKubelet() })
	cases["Bottlerocket_raid0_new"] = with(baseOptions(br), func(o *Options) { o.InstanceStorePolicy = raid0; o.AMIVersion = "1.46.0" })
	cases["Bottlerocket_raid0_old"] = with(baseOptions(br), func(o *Options) {
		o.InstanceStorePolicy = raid0
		o.AMIVersion = "v1.20.3"
		o.CustomUserData = ptr.To(bottlerocketUserData)
	})
	cases["Bottlerocket_ipv6"] = with(baseOptions(br), ipv6)
	cases["Windows2022_default"] = baseOptions(awsv1.AMIFamilyWindows2022)
	cases["Windows2022_userdata"] = with(baseOptions(awsv1.AMIFamilyWindows2022), func(o *Options) { o.CustomUserData = ptr.To(windowsUserData) })
	cases["Windows2019_kubelet"] = with(baseOptions(awsv1.AMIFamilyWindows2019), func(o *Options) { o.Kubelet = fullKubelet() })
	cases["Custom_userdata"] = with(baseOptions(awsv1.AMIFamilyCustom), func(o *Options) { o.CustomUserData = ptr.To(shellUserData) })
	cases["Custom_empty"] = baseOptions(awsv1.AMIFamilyCustom)
	return cases
}

func TestRenderGolden(t *testing.T) {
	for name, opts := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			encoded, err := Render(opts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got, err := base64.StdEncoding.DecodeString(encoded)
			if err != nil {
				t.Fatalf("Render output is not base64: %v", err)
			}
			// Rendering twice gives the same bytes (launch template hashes depend on it).
			again, err := RenderRaw(opts)
			if err != nil {
				t.Fatalf("RenderRaw: %v", err)
			}
			if diff := cmp.Diff(string(got), string(again)); diff != "" {
				t.Fatalf("output is not deterministic (-first +second):\n%s", diff)
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading golden file (run with -update to create it): %v", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("user data differs from %s (-want +got):\n%s", path, diff)
			}
		})
	}
}
