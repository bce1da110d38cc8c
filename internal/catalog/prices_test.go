package catalog

import "testing"

func TestLoadPrices(t *testing.T) {
	prices, err := LoadPrices(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		labels map[string]string
		want   float64
	}{
		"on-demand m5.large": {labels: map[string]string{"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "on-demand"}, want: 0.096},
		"unknown type":       {labels: map[string]string{"node.kubernetes.io/instance-type": "m99.huge", "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "on-demand"}},
		"no labels":          {labels: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := prices.OfLabels(tc.labels); got != tc.want {
				t.Errorf("OfLabels = %v, want %v", got, tc.want)
			}
		})
	}
	spot := prices.OfLabels(map[string]string{"node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "us-east-1a", "karpenter.sh/capacity-type": "spot"})
	if spot <= 0 || spot >= 0.096 {
		t.Errorf("spot m5.large price %v, want below on-demand", spot)
	}
}
