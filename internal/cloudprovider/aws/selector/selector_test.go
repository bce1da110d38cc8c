package selector

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestTagFilters(t *testing.T) {
	got := TagFilters(map[string]string{"team": "a", "karpenter.sh/discovery": "*"})
	want := []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{"karpenter.sh/discovery"}},
		{Name: aws.String("tag:team"), Values: []string{"a"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(ec2types.Filter{})); diff != "" {
		t.Fatalf("TagFilters (-want +got):\n%s", diff)
	}
}

func TestUnion(t *testing.T) {
	answers := map[string][]string{"a": {"x", "y"}, "b": {"y", "z"}}
	describe := func(_ context.Context, filters []ec2types.Filter) ([]string, error) {
		return answers[*filters[0].Name], nil
	}
	got, err := Union(context.Background(), [][]ec2types.Filter{{{Name: aws.String("b")}}, {{Name: aws.String("a")}}}, describe, func(s string) string { return s })
	if err != nil || !cmp.Equal(got, []string{"x", "y", "z"}) {
		t.Fatalf("Union = %v, %v; want x y z once each, sorted", got, err)
	}
	boom := errors.New("boom")
	if _, err := Union(context.Background(), [][]ec2types.Filter{{}}, func(context.Context, []ec2types.Filter) ([]string, error) { return nil, boom }, func(s string) string { return s }); !errors.Is(err, boom) {
		t.Fatalf("Union error = %v, want boom", err)
	}
}

func TestCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	c := NewCache[string](clk, time.Minute)
	calls := 0
	fetch := func() ([]string, error) { calls++; return []string{"v"}, nil }
	for range 2 {
		if got, err := c.Get([]string{"term"}, fetch); err != nil || !cmp.Equal(got, []string{"v"}) {
			t.Fatalf("Get = %v, %v", got, err)
		}
	}
	if calls != 1 {
		t.Fatalf("fetched %d times within the TTL, want 1", calls)
	}
	if _, err := c.Get([]string{"other"}, fetch); err != nil || calls != 2 {
		t.Fatalf("other terms: calls %d, err %v; want a fetch of their own", calls, err)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	if _, err := c.Get([]string{"term"}, fetch); err != nil || calls != 3 {
		t.Fatalf("after the TTL: calls %d, err %v; want a new fetch", calls, err)
	}
	if _, err := c.Get([]string{"x"}, func() ([]string, error) { return nil, errors.New("no") }); err == nil {
		t.Fatal("a failed fetch was not reported")
	}
}
