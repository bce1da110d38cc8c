package catalog

import (
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDefaultOptionsAreValid(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("DefaultOptions().Validate() = %v", err)
	}
}

func TestValidateRejectsBadOptions(t *testing.T) {
	cases := map[string]struct {
		edit func(o *Options)
		// want are substrings of the error: the field, then what is wrong.
		want []string
	}{
		"zero value": {
			edit: func(o *Options) { *o = Options{} },
			want: []string{"AMIFamily: unknown family", "Region: must not be empty", "Zones: must not be empty"},
		},
		"unknown AMI family": {
			edit: func(o *Options) { o.AMIFamily = "Ubuntu" },
			want: []string{`AMIFamily: unknown family "Ubuntu", want one of AL2023, AL2,`},
		},
		"AMI family is case-sensitive": {
			edit: func(o *Options) { o.AMIFamily = "al2023" },
			want: []string{"AMIFamily"},
		},
		"negative VM memory overhead": {
			edit: func(o *Options) { o.VMMemoryOverheadPercent = -0.1 },
			want: []string{"VMMemoryOverheadPercent: must be >= 0 and < 1, got -0.1"},
		},
		"VM memory overhead of 100%": {
			edit: func(o *Options) { o.VMMemoryOverheadPercent = 1 },
			want: []string{"VMMemoryOverheadPercent"},
		},
		"NaN VM memory overhead": {
			edit: func(o *Options) { o.VMMemoryOverheadPercent = math.NaN() },
			want: []string{"VMMemoryOverheadPercent"},
		},
		"negative reserved ENIs": {
			edit: func(o *Options) { o.ReservedENIs = -1 },
			want: []string{"ReservedENIs: must be >= 0, got -1"},
		},
		"negative maxPods": {
			edit: func(o *Options) { o.Kubelet.MaxPods = ptr[int32](-1) },
			want: []string{"Kubelet.MaxPods: must be >= 0, got -1"},
		},
		"negative podsPerCore": {
			edit: func(o *Options) { o.Kubelet.PodsPerCore = ptr[int32](-2) },
			want: []string{"Kubelet.PodsPerCore: must be >= 0, got -2"},
		},
		"kubeReserved unknown key": {
			edit: func(o *Options) { o.Kubelet.KubeReserved = map[string]string{"gpu": "1"} },
			want: []string{"Kubelet.KubeReserved[gpu]: unknown key"},
		},
		"kubeReserved not a quantity": {
			edit: func(o *Options) { o.Kubelet.KubeReserved = map[string]string{"memory": "lots"} },
			want: []string{`Kubelet.KubeReserved[memory]: parsing "lots"`},
		},
		"systemReserved negative": {
			edit: func(o *Options) { o.Kubelet.SystemReserved = map[string]string{"cpu": "-100m"} },
			want: []string{"Kubelet.SystemReserved[cpu]: must not be negative"},
		},
		"evictionHard bad percentage": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"memory.available": "150%"} },
			want: []string{`Kubelet.EvictionHard[memory.available]: percentage "150%" must be a number from 0 to 100`},
		},
		"evictionHard percentage not a number": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"nodefs.available": "ten%"} },
			want: []string{"Kubelet.EvictionHard[nodefs.available]: percentage"},
		},
		"evictionHard negative percentage": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"nodefs.available": "-5%"} },
			want: []string{"Kubelet.EvictionHard[nodefs.available]"},
		},
		"evictionHard bad quantity": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"memory.available": "1 Gi"} },
			want: []string{`Kubelet.EvictionHard[memory.available]: parsing "1 Gi"`},
		},
		"evictionSoft unknown signal": {
			edit: func(o *Options) { o.Kubelet.EvictionSoft = map[string]string{"memory.free": "1Gi"} },
			want: []string{"Kubelet.EvictionSoft[memory.free]: unknown signal"},
		},
		"evictionSoft checked on Bottlerocket too": {
			edit: func(o *Options) {
				o.AMIFamily = AMIFamilyBottlerocket
				o.Kubelet.EvictionSoft = map[string]string{"nodefs.available": "150%"}
			},
			want: []string{`Kubelet.EvictionSoft[nodefs.available]: percentage "150%"`},
		},
		"evictionHard unknown signal": {
			edit: func(o *Options) { o.Kubelet.EvictionHard = map[string]string{"memory.free": "1Gi"} },
			want: []string{"Kubelet.EvictionHard[memory.free]: unknown signal"},
		},
		"zero root volume": {
			edit: func(o *Options) { o.RootVolumeSize = ptr(resource.MustParse("0")) },
			want: []string{"RootVolumeSize: must be > 0"},
		},
		"unknown instance store policy": {
			edit: func(o *Options) { o.InstanceStorePolicy = "RAID1" },
			want: []string{`InstanceStorePolicy: must be empty or "RAID0", got "RAID1"`},
		},
		"empty zones": {
			edit: func(o *Options) { o.Zones = []string{} },
			want: []string{"Zones: must not be empty"},
		},
		"empty zone name": {
			edit: func(o *Options) { o.Zones = []string{"us-east-1a", ""} },
			want: []string{"Zones[1]: must not be empty"},
		},
		"duplicate zone": {
			edit: func(o *Options) { o.Zones = []string{"us-east-1a", "us-east-1b", "us-east-1a"} },
			want: []string{`Zones[2]: duplicate zone "us-east-1a"`},
		},
		"zone outside the region": {
			edit: func(o *Options) { o.Zones = []string{"us-west-2a"} },
			want: []string{`Zones[0]: zone "us-west-2a" is not in region "us-east-1"`},
		},
		"every error is reported": {
			edit: func(o *Options) {
				o.Kubelet.MaxPods = ptr[int32](-1)
				o.Zones = nil
			},
			want: []string{"Kubelet.MaxPods", "Zones"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := DefaultOptions()
			tc.edit(&opts)
			err := opts.Validate()
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if _, loadErr := Load(opts); loadErr == nil || !strings.Contains(loadErr.Error(), tc.want[0]) {
				t.Errorf("Load() error = %v, want the validation error", loadErr)
			}
		})
	}
}

func TestValidateAcceptsGoodOptions(t *testing.T) {
	cases := map[string]func(o *Options){
		"every family": func(o *Options) {},
		"kubelet overrides": func(o *Options) {
			o.Kubelet = KubeletOptions{
				MaxPods:        ptr[int32](0),
				PodsPerCore:    ptr[int32](0),
				KubeReserved:   map[string]string{"cpu": "0", "memory": "1Gi", "ephemeral-storage": "1G", "pid": "100"},
				SystemReserved: map[string]string{"cpu": "1.5"},
				EvictionHard: map[string]string{
					"memory.available": "0%", "nodefs.available": "100%", "nodefs.inodesFree": "5%",
					"imagefs.available": "1Gi", "imagefs.inodesFree": "2.5%", "pid.available": "10%",
				},
			}
		},
		"local zone": func(o *Options) { o.Zones = []string{"us-east-1-bos-1a"} },
		"other region": func(o *Options) {
			o.Region = "eu-west-1"
			o.Zones = []string{"eu-west-1a"}
		},
		"RAID0":           func(o *Options) { o.InstanceStorePolicy = InstanceStorePolicyRAID0 },
		"no VM overhead":  func(o *Options) { o.VMMemoryOverheadPercent = 0 },
		"reserved ENIs":   func(o *Options) { o.ReservedENIs = 2 },
		"root volume set": func(o *Options) { o.RootVolumeSize = ptr(resource.MustParse("1Ti")) },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			for _, family := range amiFamilyNames() {
				opts := DefaultOptions()
				opts.AMIFamily = AMIFamily(family)
				edit(&opts)
				if err := opts.Validate(); err != nil {
					t.Errorf("%s: Validate() = %v", family, err)
				}
			}
		})
	}
}

// TestOptionsAreNotRetained checks that Load copies what it keeps from Options.
func TestOptionsAreNotRetained(t *testing.T) {
	opts := DefaultOptions()
	size := resource.MustParse("30Gi")
	opts.RootVolumeSize = &size
	its, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Zones[0] = "us-east-1z"
	size.Add(resource.MustParse("1Gi"))
	for _, it := range its {
		if len(it.Offerings) > 0 && it.Offerings[0].Zone != "us-east-1a" {
			t.Fatalf("%s: first offering in %s, want us-east-1a", it.Name, it.Offerings[0].Zone)
		}
		if q := it.Capacity["ephemeral-storage"]; show(q) != "30Gi" {
			t.Fatalf("%s: ephemeral-storage %s, want 30Gi", it.Name, show(q))
		}
	}
}
