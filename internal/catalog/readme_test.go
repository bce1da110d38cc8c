package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeSpotChecks checks the spot-check table of hack/data/ec2/README.md
// (raw shape, pods, allocatable cpu and memory, price), written out by hand.
func TestReadmeSpotChecks(t *testing.T) {
	cases := map[string]struct {
		labels      map[string]string // a subset of the labels
		capacity    map[string]string
		allocatable map[string]string
		price       float64
	}{
		"m5.large": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "2", "karpenter.k8s.aws/instance-memory": "8192", "kubernetes.io/arch": "amd64",
			},
			// memory 8192 - ceil(8192*0.075 = 614.4) = 7577Mi.
			capacity: map[string]string{
				"cpu": "2", "memory": "7577Mi", "ephemeral-storage": "20Gi", "pods": "29", "vpc.amazonaws.com/pod-eni": "9",
			},
			// 7577 - (11*29 + 255) - 100 = 6903Mi; 20Gi - 1Gi - 2Gi = 17Gi.
			allocatable: map[string]string{
				"cpu": "1930m", "memory": "6903Mi", "ephemeral-storage": "17Gi", "pods": "29", "vpc.amazonaws.com/pod-eni": "9",
			},
			price: 0.096,
		},
		"c6g.xlarge": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "4", "karpenter.k8s.aws/instance-memory": "8192", "kubernetes.io/arch": "arm64",
				"karpenter.k8s.aws/instance-cpu-manufacturer": "aws",
			},
			// arm64: 8192 - 64 = 8128, - ceil(609.6) = 7518Mi.
			capacity: map[string]string{
				"cpu": "4", "memory": "7518Mi", "ephemeral-storage": "20Gi", "pods": "58", "vpc.amazonaws.com/pod-eni": "18",
			},
			allocatable: map[string]string{
				"cpu": "3920m", "memory": "6525Mi", "ephemeral-storage": "17Gi", "pods": "58", "vpc.amazonaws.com/pod-eni": "18",
			},
			price: 0.136,
		},
		"p4d.24xlarge": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "96", "karpenter.k8s.aws/instance-memory": "1179648", "kubernetes.io/arch": "amd64",
				"karpenter.k8s.aws/instance-gpu-name": "a100", "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
				"karpenter.k8s.aws/instance-gpu-count": "8", "karpenter.k8s.aws/instance-gpu-memory": "40960",
				"karpenter.k8s.aws/instance-local-nvme": "8000",
			},
			capacity: map[string]string{
				"cpu": "96", "memory": "1091174Mi", "ephemeral-storage": "20Gi", "pods": "737",
				"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "vpc.amazonaws.com/pod-eni": "62",
			},
			allocatable: map[string]string{
				"cpu": "95690m", "memory": "1082712Mi", "ephemeral-storage": "17Gi", "pods": "737",
				"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "4", "vpc.amazonaws.com/pod-eni": "62",
			},
			price: 21.957642,
		},
		"t3.micro": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "2", "karpenter.k8s.aws/instance-memory": "1024", "kubernetes.io/arch": "amd64",
			},
			// 2 * (2 - 1) + 2 = 4 pods; 1024 - 77 - (44 + 255) - 100 = 548Mi.
			capacity:    map[string]string{"cpu": "2", "memory": "947Mi", "ephemeral-storage": "20Gi", "pods": "4"},
			allocatable: map[string]string{"cpu": "1930m", "memory": "548Mi", "ephemeral-storage": "17Gi", "pods": "4"},
			price:       0.0104,
		},
		"g5.xlarge": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "4", "karpenter.k8s.aws/instance-memory": "16384", "kubernetes.io/arch": "amd64",
				"karpenter.k8s.aws/instance-gpu-name": "a10g", "karpenter.k8s.aws/instance-gpu-count": "1",
				"karpenter.k8s.aws/instance-gpu-memory": "22888",
			},
			capacity: map[string]string{
				"cpu": "4", "memory": "15155Mi", "ephemeral-storage": "20Gi", "pods": "58",
				"nvidia.com/gpu": "1", "vpc.amazonaws.com/pod-eni": "4",
			},
			allocatable: map[string]string{
				"cpu": "3920m", "memory": "14162Mi", "ephemeral-storage": "17Gi", "pods": "58",
				"nvidia.com/gpu": "1", "vpc.amazonaws.com/pod-eni": "4",
			},
			price: 1.006,
		},
		"inf2.xlarge": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "4", "karpenter.k8s.aws/instance-memory": "16384", "kubernetes.io/arch": "amd64",
				"karpenter.k8s.aws/instance-accelerator-name": "inferentia2", "karpenter.k8s.aws/instance-accelerator-manufacturer": "aws",
				"karpenter.k8s.aws/instance-accelerator-count": "1",
			},
			capacity: map[string]string{
				"cpu": "4", "memory": "15155Mi", "ephemeral-storage": "20Gi", "pods": "58",
				"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2", "vpc.amazonaws.com/pod-eni": "18",
			},
			allocatable: map[string]string{
				"cpu": "3920m", "memory": "14162Mi", "ephemeral-storage": "17Gi", "pods": "58",
				"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2", "vpc.amazonaws.com/pod-eni": "18",
			},
			price: 0.7582,
		},
		"trn1.32xlarge": {
			labels: map[string]string{
				"karpenter.k8s.aws/instance-cpu": "128", "karpenter.k8s.aws/instance-memory": "524288", "kubernetes.io/arch": "amd64",
				"karpenter.k8s.aws/instance-accelerator-name": "trainium", "karpenter.k8s.aws/instance-accelerator-count": "16",
			},
			capacity: map[string]string{
				"cpu": "128", "memory": "484966Mi", "ephemeral-storage": "20Gi", "pods": "247",
				"aws.amazon.com/neuron": "16", "aws.amazon.com/neuroncore": "32", "vpc.amazonaws.com/efa": "8",
				"vpc.amazonaws.com/pod-eni": "82",
			},
			allocatable: map[string]string{
				"cpu": "127610m", "memory": "481894Mi", "ephemeral-storage": "17Gi", "pods": "247",
				"aws.amazon.com/neuron": "16", "aws.amazon.com/neuroncore": "32", "vpc.amazonaws.com/efa": "8",
				"vpc.amazonaws.com/pod-eni": "82",
			},
			price: 21.5,
		},
	}
	its := mustLoad(t, DefaultOptions())
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			it, ok := its[name]
			if !ok {
				t.Fatalf("%s not loaded", name)
			}
			got := map[string]string{}
			for k := range tc.labels {
				got[k] = it.Labels[k]
			}
			if diff := cmp.Diff(tc.labels, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(canonical(t, tc.capacity), shown(it.Capacity)); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(canonical(t, tc.allocatable), shown(it.Allocatable)); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
			for _, o := range it.Offerings {
				if o.CapacityType == "on-demand" && o.Price != tc.price {
					t.Errorf("on-demand price in %s = %v, want %v", o.Zone, o.Price, tc.price)
				}
			}
			if len(it.Offerings) != 6 {
				t.Errorf("%d offerings, want 6 (3 zones x on-demand, spot)", len(it.Offerings))
			}
		})
	}
}

// TestAllLabelsOfM5Large spells out every label of one type.
func TestAllLabelsOfM5Large(t *testing.T) {
	want := map[string]string{
		"node.kubernetes.io/instance-type":                           "m5.large",
		"kubernetes.io/arch":                                         "amd64",
		"kubernetes.io/os":                                           "linux",
		"topology.kubernetes.io/region":                              "us-east-1",
		"karpenter.k8s.aws/instance-category":                        "m",
		"karpenter.k8s.aws/instance-family":                          "m5",
		"karpenter.k8s.aws/instance-generation":                      "5",
		"karpenter.k8s.aws/instance-size":                            "large",
		"karpenter.k8s.aws/instance-hypervisor":                      "nitro",
		"karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
		"karpenter.k8s.aws/instance-capability-flex":                 "false",
		"karpenter.k8s.aws/instance-cpu":                             "2",
		"karpenter.k8s.aws/instance-cpu-manufacturer":                "intel",
		"karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz":   "3100",
		"karpenter.k8s.aws/instance-memory":                          "8192",
		"karpenter.k8s.aws/instance-network-bandwidth":               "750",
		"karpenter.k8s.aws/instance-ebs-bandwidth":                   "4750",
		"karpenter.k8s.aws/instance-tenancy":                         "default",
	}
	if diff := cmp.Diff(want, mustLoad(t, DefaultOptions())["m5.large"].Labels); diff != "" {
		t.Errorf("m5.large labels (-want +got):\n%s", diff)
	}
}
