package userdata

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/bootstrap"
)

// registration is what a node registers with, as both packages see it.
type registration struct {
	ClusterName, Endpoint, CA string
	Labels                    map[string]string
	Taints                    []string
	MaxPods                   int32
	DNS                       []string
}

func sortedTaints(taints []corev1.Taint) []string {
	out := make([]string, 0, len(taints))
	for i := range taints {
		out = append(out, taints[i].ToString())
	}
	sort.Strings(out)
	return out
}

// TestRoundTrip renders every golden case with this package and reads the
// result with internal/localaws/bootstrap, an independent reader of the
// same formats: both must agree on what the node registers with.
func TestRoundTrip(t *testing.T) {
	for name, opts := range goldenCases() {
		if opts.Family == awsv1.AMIFamilyCustom {
			continue
		}
		t.Run(name, func(t *testing.T) {
			raw, err := RenderRaw(opts)
			if err != nil {
				t.Fatalf("RenderRaw: %v", err)
			}
			want := registration{
				ClusterName: opts.ClusterName, Endpoint: opts.ClusterEndpoint, CA: opts.CABundle,
				Labels: opts.nodeLabels(), Taints: sortedTaints(opts.taints()),
				MaxPods: *opts.Kubelet.MaxPods, DNS: opts.clusterDNS(),
			}
			if opts.Family != awsv1.AMIFamilyAL2023 {
				want.DNS = want.DNS[:1] // only AL2023 passes the whole list
			}
			if opts.Family == awsv1.AMIFamilyBottlerocket && opts.CustomUserData != nil {
				want.Labels["custom-node-label"] = "custom" // the user's label survives the merge
			}
			hints := []string{opts.Family}
			if !strings.HasSuffix(name, "_mime") { // AL2_mime holds a NodeConfig part, so it detects as AL2023
				hints = append(hints, "")
			}
			for _, hint := range hints {
				c, err := bootstrap.Parse(raw, hint)
				if err != nil {
					t.Fatalf("bootstrap.Parse(hint %q): %v\n%s", hint, err, raw)
				}
				got := registration{
					ClusterName: c.ClusterName, Endpoint: c.APIServerEndpoint, CA: c.CABundle,
					Labels: c.Labels, Taints: sortedTaints(c.Taints), DNS: c.ClusterDNS,
				}
				if c.MaxPods != nil {
					got.MaxPods = *c.MaxPods
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("hint %q: registration differs (-rendered +parsed):\n%s", hint, diff)
				}
			}
		})
	}
}
