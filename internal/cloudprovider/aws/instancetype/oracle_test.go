package instancetype

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog"
	"github.com/dovetail-autoscaler/dovetail/internal/catalog/schema"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/unavailable"
	ec2itypes "github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/ec2types"
)

// documentedTypes is the number of types the catalog documents.
const documentedTypes = 1363

// TestOracle is the oracle: every catalog type, served as EC2's
// DescribeInstanceTypes would serve it (ToEC2) and listed by the provider for
// an EC2NodeClass of each AMI family, has the capacity and allocatable cpu,
// memory, pods and ephemeral-storage that catalog.Load computes for that
// family, and the same labels and extended resources.
func TestOracle(t *testing.T) {
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	families := []catalog.AMIFamily{
		catalog.AMIFamilyAL2023, catalog.AMIFamilyAL2, catalog.AMIFamilyBottlerocket,
		catalog.AMIFamilyWindows2022, catalog.AMIFamilyCustom,
	}
	fe := newFakeEC2(t, zones...)
	if len(fe.infos) != documentedTypes {
		t.Fatalf("serving %d types, want %d", len(fe.infos), documentedTypes)
	}
	p, err := New(fe, newFakePrices(t), unavailable.New(clocktesting.NewFakeClock(time.Now())), clocktesting.NewFakeClock(time.Now()),
		Settings{Region: "us-east-1", VMMemoryOverheadPercent: catalog.DefaultVMMemoryOverheadPercent})
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		t.Run(string(family), func(t *testing.T) {
			opts := catalog.DefaultOptions()
			opts.AMIFamily = family
			want, err := catalog.Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			nc := nodeClass("oracle-"+string(family), family, zones...)
			got, err := p.List(context.Background(), nc)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]int{}
			for i, it := range got {
				byName[it.Name] = i
			}
			priced, mismatches := 0, 0
			for _, w := range want {
				if len(w.Offerings) == 0 {
					// Unpriced types have no offering, so the provider leaves them out.
					if _, ok := byName[w.Name]; ok {
						t.Errorf("%s: unpriced type listed", w.Name)
					}
					continue
				}
				priced++
				i, ok := byName[w.Name]
				if !ok {
					t.Errorf("%s: not listed", w.Name)
					mismatches++
					continue
				}
				g := got[i]
				keys := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage}
				if diff := cmp.Diff(pick(w.Capacity, keys), pick(g.Capacity, keys)); diff != "" {
					t.Errorf("%s: capacity (-catalog +provider):\n%s", w.Name, diff)
					mismatches++
				}
				// Allocatable as the cloud-provider model computes it (it
				// clamps at zero, where the catalog goes negative for the
				// smallest types under Windows), and the overhead it comes from.
				model := ec2itypes.FromCatalog([]catalog.InstanceType{w})[0]
				if diff := cmp.Diff(pick(model.Allocatable(), keys), pick(g.Allocatable(), keys)); diff != "" {
					t.Errorf("%s: allocatable (-catalog +provider):\n%s", w.Name, diff)
					mismatches++
				}
				wantOverhead := []map[string]string{shown(w.Overhead.KubeReserved), shown(w.Overhead.SystemReserved), shown(w.Overhead.EvictionThreshold)}
				gotOverhead := []map[string]string{shown(g.Overhead.KubeReserved), shown(g.Overhead.SystemReserved), shown(g.Overhead.EvictionThreshold)}
				if diff := cmp.Diff(wantOverhead, gotOverhead); diff != "" {
					t.Errorf("%s: overhead (-catalog +provider):\n%s", w.Name, diff)
					mismatches++
				}
				if diff := cmp.Diff(shown(w.Capacity), shown(g.Capacity)); diff != "" {
					t.Errorf("%s: all capacity (-catalog +provider):\n%s", w.Name, diff)
					mismatches++
				}
				for key, value := range w.Labels {
					if got := g.Requirements.Labels()[key]; got != value {
						t.Errorf("%s: label %s = %q, catalog %q", w.Name, key, got, value)
						mismatches++
					}
				}
			}
			if len(got) != priced {
				t.Errorf("listed %d types, want the %d priced ones", len(got), priced)
			}
			if mismatches > 0 {
				t.Errorf("%s: %d types compared, %d mismatches, want none", family, priced, mismatches)
			}
			t.Logf("%s: %d types compared, %d mismatches", family, priced, mismatches)
		})
	}
}

// TestFromEC2RoundTrip checks FromEC2(ToEC2(f)) == f for every catalog type,
// up to what EC2 does not report: the price, and the VPC limits of the few
// types the catalog carries only a pod count for (their pods must agree).
func TestFromEC2RoundTrip(t *testing.T) {
	known := knownFacts(t)
	if len(known) != documentedTypes {
		t.Fatalf("catalog has %d types, want %d", len(known), documentedTypes)
	}
	for name, want := range known {
		got, err := FromEC2(ToEC2(want), known)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want.OnDemandPrice = nil
		if want.ENI == nil {
			if got.Pods != want.Pods {
				t.Errorf("%s: pods %d, catalog %d", name, got.Pods, want.Pods)
			}
			got.ENI = nil
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: facts (-catalog +converted):\n%s", name, diff)
		}
	}
}

// nodeClass returns a ready EC2NodeClass of a family with one subnet per zone.
func nodeClass(name string, family catalog.AMIFamily, zones ...string) *awsv1.EC2NodeClass {
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name), Generation: 1},
		Spec:       awsv1.EC2NodeClassSpec{AMIFamily: ptr(string(family))},
	}
	for i, z := range zones {
		nc.Status.Subnets = append(nc.Status.Subnets, awsv1.Subnet{ID: "subnet-" + z, Zone: z, ZoneID: "use1-az" + string(rune('1'+i))})
	}
	return nc
}

// pick returns the named resources in canonical form.
func pick(rl corev1.ResourceList, keys []corev1.ResourceName) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if q, ok := rl[k]; ok {
			out[string(k)] = q.String()
		}
	}
	return out
}

// shown renders a resource list in canonical form.
func shown(rl corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, q := range rl {
		out[string(k)] = q.String()
	}
	return out
}

// TestOracleAllTypes runs the conversion of all 1363 catalog types, priced or
// not, through catalog.Compute for each AMI family and some kubelet settings,
// and compares capacity, overhead, allocatable and labels with catalog.Load.
func TestOracleAllTypes(t *testing.T) {
	known := knownFacts(t)
	facts, err := catalog.Facts()
	if err != nil {
		t.Fatal(err)
	}
	converted := make([]schema.InstanceType, len(facts))
	for i, f := range facts {
		if converted[i], err = FromEC2(ToEC2(f), known); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string]func(o *catalog.Options){
		"AL2023":       func(o *catalog.Options) {},
		"AL2":          func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyAL2 },
		"Bottlerocket": func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyBottlerocket },
		"Windows2019":  func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyWindows2019 },
		"Windows2022":  func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyWindows2022 },
		"Windows2025":  func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyWindows2025 },
		"Custom":       func(o *catalog.Options) { o.AMIFamily = catalog.AMIFamilyCustom },
		"AL2023 kubelet and RAID0": func(o *catalog.Options) {
			o.Kubelet = catalog.KubeletOptions{PodsPerCore: ptr[int32](3), SystemReserved: map[string]string{"memory": "200Mi"}, EvictionHard: map[string]string{"nodefs.available": "15%"}, EvictionSoft: map[string]string{"memory.available": "300Mi"}}
			o.InstanceStorePolicy = catalog.InstanceStorePolicyRAID0
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			opts := catalog.DefaultOptions()
			edit(&opts)
			want, err := catalog.Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			opts.Zones = nil
			got, err := catalog.Compute(converted, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("computed %d types, Load %d", len(got), len(want))
			}
			mismatches := 0
			for i := range want {
				w, g := want[i], got[i]
				w.Offerings = nil
				if known[w.Name].ENI == nil {
					// EC2 reports interface limits for every type; the catalog
					// lacks them for 8 (unpriced hpc and trn2) types, so it
					// cannot give their Windows nodes this resource.
					delete(g.Capacity, catalog.ResourcePrivateIPv4Address)
					delete(g.Allocatable, catalog.ResourcePrivateIPv4Address)
				}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s (-Load +converted):\n%s", w.Name, diff)
					mismatches++
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d types differ", mismatches, len(want))
			}
			t.Logf("%s: %d types compared, %d mismatches", name, len(want), mismatches)
		})
	}
}
