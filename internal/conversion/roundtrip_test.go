package conversion

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/randfill"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	awsv1beta1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1beta1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1beta1"
)

// roundTripIterations is how many random objects each round trip converts, as
// CAPI's conversion fuzz tests do.
const roundTripIterations = 10000

// roundTrip describes, for one kind, the conversions hub -> spoke -> hub and
// spoke -> hub -> spoke (CAPI's util/conversion FuzzTestFunc shape).
type roundTrip struct {
	newHub, newSpoke func() any
	hubToSpokeToHub  func(ctx context.Context, c *Converter, hub any) (any, error)
	spokeToHubSpoke  func(ctx context.Context, c *Converter, spoke any) (any, error)
}

func roundTrips() map[string]roundTrip {
	return map[string]roundTrip{
		"NodePool": {
			newHub:   func() any { return &v1.NodePool{TypeMeta: typeMeta(v1.SchemeGroupVersion, "NodePool")} },
			newSpoke: func() any { return &v1beta1.NodePool{TypeMeta: typeMeta(v1beta1.SchemeGroupVersion, "NodePool")} },
			hubToSpokeToHub: func(_ context.Context, c *Converter, hub any) (any, error) {
				spoke, err := c.NodePoolToV1beta1(hub.(*v1.NodePool))
				if err != nil {
					return nil, err
				}
				return c.NodePoolToV1(spoke)
			},
			spokeToHubSpoke: func(_ context.Context, c *Converter, spoke any) (any, error) {
				hub, err := c.NodePoolToV1(spoke.(*v1beta1.NodePool))
				if err != nil {
					return nil, err
				}
				return c.NodePoolToV1beta1(hub)
			},
		},
		"NodeClaim": {
			newHub:   func() any { return &v1.NodeClaim{TypeMeta: typeMeta(v1.SchemeGroupVersion, "NodeClaim")} },
			newSpoke: func() any { return &v1beta1.NodeClaim{TypeMeta: typeMeta(v1beta1.SchemeGroupVersion, "NodeClaim")} },
			hubToSpokeToHub: func(ctx context.Context, c *Converter, hub any) (any, error) {
				spoke, err := c.NodeClaimToV1beta1(ctx, hub.(*v1.NodeClaim))
				if err != nil {
					return nil, err
				}
				return c.NodeClaimToV1(ctx, spoke)
			},
			spokeToHubSpoke: func(ctx context.Context, c *Converter, spoke any) (any, error) {
				hub, err := c.NodeClaimToV1(ctx, spoke.(*v1beta1.NodeClaim))
				if err != nil {
					return nil, err
				}
				return c.NodeClaimToV1beta1(ctx, hub)
			},
		},
		"EC2NodeClass": {
			newHub: func() any { return &awsv1.EC2NodeClass{TypeMeta: typeMeta(awsv1.SchemeGroupVersion, "EC2NodeClass")} },
			newSpoke: func() any {
				return &awsv1beta1.EC2NodeClass{TypeMeta: typeMeta(awsv1beta1.SchemeGroupVersion, "EC2NodeClass")}
			},
			hubToSpokeToHub: func(_ context.Context, c *Converter, hub any) (any, error) {
				spoke, err := c.EC2NodeClassToV1beta1(hub.(*awsv1.EC2NodeClass))
				if err != nil {
					return nil, err
				}
				return c.EC2NodeClassToV1(spoke)
			},
			spokeToHubSpoke: func(_ context.Context, c *Converter, spoke any) (any, error) {
				hub, err := c.EC2NodeClassToV1(spoke.(*awsv1beta1.EC2NodeClass))
				if err != nil {
					return nil, err
				}
				return c.EC2NodeClassToV1beta1(hub)
			},
		},
	}
}

// TestRoundTrip converts roundTripIterations random valid objects of each kind
// v1 -> v1beta1 -> v1 and v1beta1 -> v1 -> v1beta1 and requires the result to
// be semantically equal to the input under Semantic (apimachinery's equality,
// plus NillableDuration compared by text). No field is
// excluded from the comparison: every v1 value without a v1beta1 field, and
// every v1beta1 value without a v1 field, travels in an annotation.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := &Converter{NodePools: testNodePools()}
	for kind, rt := range roundTrips() {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			checkRoundTrips(t, c, rt, randfill.New().RandSource(newRand(1)), roundTripIterations)
		})
	}
}

// checkRoundTrips fills n hubs and n spokes with f and checks both round trips.
func checkRoundTrips(t *testing.T, c *Converter, rt roundTrip, f *randfill.Filler, n int) {
	t.Helper()
	f = newFiller(f)
	ctx := context.Background()
	semantic := Semantic()
	for i := range n {
		hub := rt.newHub()
		f.Fill(hub)
		got, err := rt.hubToSpokeToHub(ctx, c, hub)
		if err != nil {
			t.Fatalf("v1 -> v1beta1 -> v1, object %d: %v", i, err)
		}
		if !semantic.DeepEqual(hub, got) {
			t.Fatalf("v1 -> v1beta1 -> v1, object %d changed (-want +got):\n%s", i, cmp.Diff(hub, got, cmpOptions()...))
		}

		spoke := rt.newSpoke()
		f.Fill(spoke)
		got, err = rt.spokeToHubSpoke(ctx, c, spoke)
		if err != nil {
			t.Fatalf("v1beta1 -> v1 -> v1beta1, object %d: %v", i, err)
		}
		if !semantic.DeepEqual(spoke, got) {
			t.Fatalf("v1beta1 -> v1 -> v1beta1, object %d changed (-want +got):\n%s", i, cmp.Diff(spoke, got, cmpOptions()...))
		}
	}
}

// FuzzRoundTrip lets `go test -fuzz FuzzRoundTrip` explore beyond the seeded
// objects of TestRoundTrip: the fuzzer's bytes drive randfill, so every input
// is still a valid object.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	c := &Converter{NodePools: testNodePools()}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, rt := range roundTrips() {
			checkRoundTrips(t, c, rt, randfill.NewFromGoFuzz(data), 1)
		}
	})
}
