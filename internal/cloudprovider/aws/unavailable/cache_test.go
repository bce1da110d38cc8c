package unavailable

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// step is one action on the cache in a table test.
type step struct {
	// advance moves the fake clock first.
	advance time.Duration
	// mark marks "type/zone/capacityType"; markCapacityType marks a capacity type.
	mark, markCapacityType string
}

func TestCache(t *testing.T) {
	const (
		odA   = "m5.large/us-east-1a/on-demand"
		spotA = "m5.large/us-east-1a/spot"
		spotB = "m5.large/us-east-1b/spot"
		c5A   = "c5.large/us-east-1a/spot"
	)
	probes := []string{odA, spotA, spotB, c5A}
	cases := map[string]struct {
		steps []step
		// want are the probes unavailable after the steps.
		want []string
		// wantSeqBumps is how much SeqNum grew.
		wantSeqBumps uint64
	}{
		"empty": {},
		"one offering": {
			steps:        []step{{mark: spotA}},
			want:         []string{spotA},
			wantSeqBumps: 1,
		},
		"just before the TTL": {
			steps:        []step{{mark: spotA}, {advance: TTL - time.Nanosecond}},
			want:         []string{spotA},
			wantSeqBumps: 1,
		},
		"expires at the TTL and the expiry bumps SeqNum": {
			steps:        []step{{mark: spotA}, {advance: TTL}},
			wantSeqBumps: 2,
		},
		"marking again extends the mark": {
			steps:        []step{{mark: spotA}, {advance: 2 * time.Minute, mark: spotA}, {advance: 2 * time.Minute}},
			want:         []string{spotA},
			wantSeqBumps: 2,
		},
		"marks expire one by one": {
			steps:        []step{{mark: spotA}, {advance: time.Minute, mark: spotB}, {advance: 2 * time.Minute}},
			want:         []string{spotB},
			wantSeqBumps: 3,
		},
		"capacity type": {
			steps:        []step{{markCapacityType: "spot"}},
			want:         []string{spotA, spotB, c5A},
			wantSeqBumps: 1,
		},
		"capacity type expires": {
			steps:        []step{{markCapacityType: "spot"}, {advance: TTL}},
			wantSeqBumps: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
			c := New(clk)
			start := c.SeqNum()
			for _, s := range tc.steps {
				clk.Step(s.advance)
				if s.mark != "" {
					var it, zone, ct string
					mustSplit(t, s.mark, &it, &zone, &ct)
					c.MarkUnavailable(it, zone, ct, "InsufficientInstanceCapacity")
				}
				if s.markCapacityType != "" {
					c.MarkCapacityTypeUnavailable(s.markCapacityType, "SpotSLRCreationFailed")
				}
			}
			var got []string
			for _, p := range probes {
				var it, zone, ct string
				mustSplit(t, p, &it, &zone, &ct)
				if c.IsUnavailable(it, zone, ct) {
					got = append(got, p)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unavailable (-want +got):\n%s", diff)
			}
			if got := c.SeqNum() - start; got != tc.wantSeqBumps {
				t.Errorf("SeqNum grew by %d, want %d", got, tc.wantSeqBumps)
			}
			if got := c.SeqNum() - start; got != tc.wantSeqBumps {
				t.Errorf("reading SeqNum again changed it: grew by %d, want %d", got, tc.wantSeqBumps)
			}
		})
	}
}

func TestReason(t *testing.T) {
	c := New(clocktesting.NewFakeClock(time.Now()))
	c.MarkUnavailable("m5.large", "us-east-1a", "spot", "InsufficientInstanceCapacity")
	cases := map[string]struct {
		it, zone, ct string
		want         string
		wantOK       bool
	}{
		"marked offering":    {it: "m5.large", zone: "us-east-1a", ct: "spot", want: "InsufficientInstanceCapacity", wantOK: true},
		"other zone":         {it: "m5.large", zone: "us-east-1b", ct: "spot"},
		"other capacity":     {it: "m5.large", zone: "us-east-1a", ct: "on-demand"},
		"other type":         {it: "m5.xlarge", zone: "us-east-1a", ct: "spot"},
		"empty is not a key": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := c.Reason(tc.it, tc.zone, tc.ct)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("Reason = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if got := c.Len(); got != 1 {
		t.Errorf("Len = %d, want 1", got)
	}
}

// TestConcurrentUse marks and reads from many goroutines; run it with -race.
func TestConcurrentUse(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	c := New(clk)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				it := fmt.Sprintf("m5.%d", i%10)
				switch i % 4 {
				case 0:
					c.MarkUnavailable(it, "us-east-1a", "spot", "test")
				case 1:
					c.IsUnavailable(it, "us-east-1a", "spot")
				case 2:
					c.SeqNum()
				case 3:
					if g == 0 {
						clk.Step(time.Minute)
					}
					c.MarkCapacityTypeUnavailable("spot", "test")
				}
			}
		}()
	}
	wg.Wait()
	if c.SeqNum() == 0 {
		t.Error("SeqNum did not move")
	}
}

// mustSplit splits "a/b/c" into three strings.
func mustSplit(t *testing.T, s string, a, b, c *string) {
	t.Helper()
	parts := strings.Split(s, "/")
	if len(parts) != 3 {
		t.Fatalf("bad probe %q", s)
	}
	*a, *b, *c = parts[0], parts[1], parts[2]
}
