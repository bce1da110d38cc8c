package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestOptionsChangeTheFormulas applies one kubelet override, AMI family or
// option at a time and checks the result against the formulas of
// hack/data/ec2/README.md, worked out by hand. Unless a case says otherwise the
// type is m5.large: 2 vCPUs, 8192MiB (7577Mi after the 7.5% VM overhead),
// 3 ENIs of 10 addresses (29 pods), 20Gi root volume; by default it has
// kube-reserved 70m / 574Mi / 1Gi and eviction 100Mi / 2Gi.
//
// Each want map lists only the resources the case is about.
func TestOptionsChangeTheFormulas(t *testing.T) {
	cases := map[string]struct {
		instanceType string
		edit         func(o *Options)
		capacity     map[string]string
		kubeReserved map[string]string
		eviction     map[string]string
		allocatable  map[string]string
	}{
		"defaults": {
			capacity:    map[string]string{"pods": "29", "memory": "7577Mi", "ephemeral-storage": "20Gi"},
			allocatable: map[string]string{"cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": "17Gi"},
		},
		"maxPods replaces pods; AL2023 still sizes kube-reserved memory from ENI pods": {
			edit:         func(o *Options) { o.Kubelet.MaxPods = ptr[int32](110) },
			capacity:     map[string]string{"pods": "110"},
			kubeReserved: map[string]string{"memory": "574Mi"},
			allocatable:  map[string]string{"pods": "110", "memory": "6903Mi"},
		},
		"maxPods on Bottlerocket sizes kube-reserved memory from the pods capacity": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyBottlerocket
				o.Kubelet.MaxPods = ptr[int32](110)
			},
			capacity:     map[string]string{"pods": "110"},
			kubeReserved: map[string]string{"memory": "1465Mi"}, // 11*110 + 255
			allocatable:  map[string]string{"memory": "6012Mi"}, // 7577 - 1465 - 100
		},
		"maxPods 0": {
			edit:        func(o *Options) { o.Kubelet.MaxPods = ptr[int32](0) },
			allocatable: map[string]string{"pods": "0", "memory": "6903Mi"},
		},
		"podsPerCore caps pods": {
			edit:         func(o *Options) { o.Kubelet.PodsPerCore = ptr[int32](4) },
			capacity:     map[string]string{"pods": "8"},
			kubeReserved: map[string]string{"memory": "574Mi"},
		},
		"podsPerCore never raises pods": {
			edit:     func(o *Options) { o.Kubelet.PodsPerCore = ptr[int32](20) },
			capacity: map[string]string{"pods": "29"},
		},
		"podsPerCore 0 means no cap": {
			edit:     func(o *Options) { o.Kubelet.PodsPerCore = ptr[int32](0) },
			capacity: map[string]string{"pods": "29"},
		},
		"podsPerCore caps maxPods": {
			edit: func(o *Options) {
				o.Kubelet.MaxPods = ptr[int32](110)
				o.Kubelet.PodsPerCore = ptr[int32](4)
			},
			capacity: map[string]string{"pods": "8"},
		},
		"Bottlerocket ignores podsPerCore": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyBottlerocket
				o.Kubelet.PodsPerCore = ptr[int32](4)
			},
			capacity:     map[string]string{"pods": "29", "ephemeral-storage": "20Gi"},
			kubeReserved: map[string]string{"memory": "574Mi"},
			allocatable:  map[string]string{"memory": "6903Mi"},
		},
		"kubeReserved replaces cpu and memory only": {
			edit:         func(o *Options) { o.Kubelet.KubeReserved = map[string]string{"cpu": "500m", "memory": "1Gi"} },
			kubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
			allocatable:  map[string]string{"cpu": "1500m", "memory": "6453Mi", "ephemeral-storage": "17Gi"},
		},
		"kubeReserved ephemeral-storage and pid": {
			edit: func(o *Options) {
				o.Kubelet.KubeReserved = map[string]string{"ephemeral-storage": "5Gi", "pid": "1000"}
			},
			kubeReserved: map[string]string{"cpu": "70m", "memory": "574Mi", "ephemeral-storage": "5Gi", "pid": "1000"},
			allocatable:  map[string]string{"cpu": "1930m", "ephemeral-storage": "13Gi"},
		},
		"systemReserved comes off allocatable": {
			edit: func(o *Options) {
				o.Kubelet.SystemReserved = map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi"}
			},
			allocatable: map[string]string{"cpu": "1830m", "memory": "6703Mi", "ephemeral-storage": "16Gi"},
		},
		"evictionHard memory percentage of capacity, rounded up": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"memory.available": "5%"} },
			// ceil(7945060352 * 5 / 100) = 397253018 bytes.
			eviction:    map[string]string{"memory": "397253018", "ephemeral-storage": "2Gi"},
			allocatable: map[string]string{"memory": "6945924710"}, // 7945060352 - 601882624 - 397253018
		},
		"evictionHard nodefs percentage": {
			edit:        func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"nodefs.available": "15%"} },
			eviction:    map[string]string{"memory": "100Mi", "ephemeral-storage": "3Gi"},
			allocatable: map[string]string{"ephemeral-storage": "16Gi"},
		},
		"evictionHard quantities": {
			edit: func(o *Options) {
				o.Kubelet.EvictionHard = map[string]string{"memory.available": "500Mi", "nodefs.available": "1Gi"}
			},
			eviction:    map[string]string{"memory": "500Mi", "ephemeral-storage": "1Gi"},
			allocatable: map[string]string{"memory": "6503Mi", "ephemeral-storage": "18Gi"},
		},
		"evictionHard 100% disables the threshold": {
			edit: func(o *Options) {
				o.Kubelet.EvictionHard = map[string]string{"memory.available": "100%", "nodefs.available": "100%"}
			},
			eviction:    map[string]string{"memory": "0", "ephemeral-storage": "0"},
			allocatable: map[string]string{"memory": "7003Mi", "ephemeral-storage": "19Gi"},
		},
		"evictionHard signals other than memory and nodefs change nothing": {
			edit: func(o *Options) {
				o.Kubelet.EvictionHard = map[string]string{"nodefs.inodesFree": "5%", "imagefs.available": "15%"}
			},
			eviction:    map[string]string{"memory": "100Mi", "ephemeral-storage": "2Gi"},
			allocatable: map[string]string{"memory": "6903Mi", "ephemeral-storage": "17Gi"},
		},
		"evictionSoft above the hard threshold reserves the soft one": {
			edit: func(o *Options) {
				o.Kubelet.EvictionHard = map[string]string{"memory.available": "100Mi"}
				o.Kubelet.EvictionSoft = map[string]string{"memory.available": "500Mi", "nodefs.available": "15%"}
			},
			eviction:    map[string]string{"memory": "500Mi", "ephemeral-storage": "3Gi"},
			allocatable: map[string]string{"memory": "6503Mi", "ephemeral-storage": "16Gi"},
		},
		"evictionSoft below the hard threshold changes nothing": {
			edit: func(o *Options) {
				o.Kubelet.EvictionHard = map[string]string{"memory.available": "500Mi"}
				o.Kubelet.EvictionSoft = map[string]string{"memory.available": "200Mi"}
			},
			eviction: map[string]string{"memory": "500Mi", "ephemeral-storage": "2Gi"},
		},
		"evictionSoft alone replaces the default, even below it": {
			edit:     func(o *Options) { o.Kubelet.EvictionSoft = map[string]string{"memory.available": "50Mi"} },
			eviction: map[string]string{"memory": "50Mi", "ephemeral-storage": "2Gi"},
		},
		"Bottlerocket ignores evictionSoft": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyBottlerocket
				o.Kubelet.EvictionSoft = map[string]string{"memory.available": "500Mi", "nodefs.available": "50%"}
			},
			eviction: map[string]string{"memory": "100Mi", "ephemeral-storage": "2Gi"},
		},
		"Windows honours evictionSoft": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyWindows2022
				o.Kubelet.EvictionSoft = map[string]string{"memory.available": "1Gi"}
			},
			eviction: map[string]string{"memory": "1Gi", "ephemeral-storage": "5Gi"},
		},
		"reservedENIs lower pods but not kube-reserved memory": {
			edit:         func(o *Options) { o.ReservedENIs = 1 },
			capacity:     map[string]string{"pods": "20"}, // (3-1) * 9 + 2
			kubeReserved: map[string]string{"memory": "574Mi"},
		},
		"reservedENIs can leave no pods": {
			edit:     func(o *Options) { o.ReservedENIs = 3 },
			capacity: map[string]string{"pods": "0"},
		},
		"types without VPC limits keep their documented pods": {
			instanceType: "hpc7a.96xlarge",
			edit:         func(o *Options) { o.ReservedENIs = 1 },
			capacity:     map[string]string{"pods": "100"},
			kubeReserved: map[string]string{"memory": "1355Mi"},
		},
		"no VM memory overhead": {
			edit:        func(o *Options) { o.VMMemoryOverheadPercent = 0 },
			capacity:    map[string]string{"memory": "8192Mi"},
			allocatable: map[string]string{"memory": "7518Mi"},
		},
		"root volume size": {
			edit:        func(o *Options) { o.RootVolumeSize = ptr(resource.MustParse("100Gi")) },
			capacity:    map[string]string{"ephemeral-storage": "100Gi"},
			eviction:    map[string]string{"ephemeral-storage": "10Gi"},
			allocatable: map[string]string{"ephemeral-storage": "89Gi"},
		},
		"RAID0 uses the NVMe size in decimal GB": {
			instanceType: "m5d.large",
			edit:         func(o *Options) { o.InstanceStorePolicy = InstanceStorePolicyRAID0 },
			capacity:     map[string]string{"ephemeral-storage": "75G"},
			eviction:     map[string]string{"ephemeral-storage": "7500M"},
			allocatable:  map[string]string{"ephemeral-storage": "66426258176"}, // 75e9 - 1Gi - 7.5e9
		},
		"RAID0 without NVMe keeps the root volume": {
			edit:     func(o *Options) { o.InstanceStorePolicy = InstanceStorePolicyRAID0 },
			capacity: map[string]string{"ephemeral-storage": "20Gi"},
		},
		"Windows: 110 pods, private IPv4 addresses, 50Gi root volume": {
			edit: func(o *Options) { o.AMIFamily = AMIFamilyWindows2022 },
			capacity: map[string]string{
				"pods": "110", "vpc.amazonaws.com/PrivateIPv4Address": "9", "ephemeral-storage": "50Gi", "memory": "7577Mi",
			},
			kubeReserved: map[string]string{"memory": "1465Mi"},
			eviction:     map[string]string{"ephemeral-storage": "5Gi"},
			allocatable:  map[string]string{"memory": "6012Mi", "ephemeral-storage": "44Gi"},
		},
		"Windows honours podsPerCore": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyWindows2019
				o.Kubelet.PodsPerCore = ptr[int32](4)
			},
			capacity:     map[string]string{"pods": "8"},
			kubeReserved: map[string]string{"memory": "343Mi"}, // 11*8 + 255
			allocatable:  map[string]string{"memory": "7134Mi"},
		},
		"overhead larger than capacity gives negative allocatable, as in Karpenter": {
			instanceType: "t3.micro",
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyBottlerocket
				o.Kubelet.MaxPods = ptr[int32](110)
			},
			allocatable: map[string]string{"memory": "-618Mi"}, // 947 - 1465 - 100
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			if tc.edit != nil {
				tc.edit(&opts)
			}
			typ := tc.instanceType
			if typ == "" {
				typ = "m5.large"
			}
			it, ok := mustLoad(t, opts)[typ]
			if !ok {
				t.Fatalf("%s not loaded", typ)
			}
			for _, c := range []struct {
				what string
				want map[string]string
				got  corev1.ResourceList
			}{
				{"capacity", tc.capacity, it.Capacity},
				{"kube-reserved", tc.kubeReserved, it.Overhead.KubeReserved},
				{"eviction threshold", tc.eviction, it.Overhead.EvictionThreshold},
				{"allocatable", tc.allocatable, it.Allocatable},
			} {
				if c.want == nil {
					continue
				}
				got := shown(c.got)
				for k := range got {
					if _, ok := c.want[k]; !ok {
						delete(got, k)
					}
				}
				if diff := cmp.Diff(canonical(t, c.want), got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", c.what, diff)
				}
			}
		})
	}
}

// TestLinuxFamiliesAgree checks that AL2 and Custom compute exactly what
// AL2023 does, for every type.
func TestLinuxFamiliesAgree(t *testing.T) {
	want := mustLoad(t, DefaultOptions())
	for _, family := range []AMIFamily{AMIFamilyAL2, AMIFamilyCustom} {
		opts := DefaultOptions()
		opts.AMIFamily = family
		got := mustLoad(t, opts)
		if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
			t.Errorf("%s differs from AL2023 (-AL2023 +%s):\n%s", family, family, diff)
		}
	}
}

func TestWindowsFamilies(t *testing.T) {
	builds := map[AMIFamily]string{
		AMIFamilyWindows2019: "10.0.17763",
		AMIFamilyWindows2022: "10.0.20348",
		AMIFamilyWindows2025: "10.0.26100",
	}
	for family, build := range builds {
		t.Run(string(family), func(t *testing.T) {
			opts := DefaultOptions()
			opts.AMIFamily = family
			its := mustLoad(t, opts)
			// 967 of the 1363 types are amd64; Windows has no arm64 images.
			if len(its) != 967 {
				t.Errorf("loaded %d types, want the 967 amd64 ones", len(its))
			}
			if _, ok := its["c6g.xlarge"]; ok {
				t.Error("arm64 type c6g.xlarge loaded under a Windows family")
			}
			for name, it := range its {
				if it.Labels[corev1.LabelOSStable] != "windows" || it.Labels[corev1.LabelWindowsBuild] != build {
					t.Fatalf("%s: os %q, windows-build %q; want windows, %s",
						name, it.Labels[corev1.LabelOSStable], it.Labels[corev1.LabelWindowsBuild], build)
				}
			}
		})
	}
}
