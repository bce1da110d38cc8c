package localaws

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	awseks "github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	awsiam "github.com/aws/aws-sdk-go-v2/service/iam"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsssm "github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
)

// attempts counts the HTTP requests an SDK client sends and can run a hook
// after each answer.
type attempts struct {
	next http.RoundTripper

	mu    sync.Mutex
	n     int
	after func(*http.Response)
}

// RoundTrip implements http.RoundTripper.
func (a *attempts) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(r)
	a.mu.Lock()
	a.n++
	after := a.after
	a.mu.Unlock()
	if err == nil && after != nil {
		after(resp)
	}
	return resp, err
}

// count is how many requests were sent.
func (a *attempts) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// counted returns cfg with its HTTP transport wrapped in an attempt counter
// and its retryer allowing maxAttempts attempts without backoff or retry
// quota, so that a test retries at once.
func counted(t *testing.T, cfg aws.Config, maxAttempts int) (aws.Config, *attempts) {
	t.Helper()
	hc, ok := cfg.HTTPClient.(*http.Client)
	if !ok {
		t.Fatalf("AWSConfig's HTTP client is a %T, not an *http.Client", cfg.HTTPClient)
	}
	a := &attempts{next: hc.Transport}
	client := *hc
	client.Transport = a
	cfg.HTTPClient = &client
	cfg.Retryer = func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = maxAttempts
			o.RateLimiter = ratelimit.None
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	}
	return cfg, a
}

// TestEveryServiceIsThrottledInItsOwnShape throttles each service in turn
// and calls it through its SDK client: without retries the call fails with
// the service's own code and status; with retries the SDK retries the
// throttle (every attempt throttled: MaxAttempts requests, then
// retry.MaxAttemptsError), and succeeds once throttling stops.
func TestEveryServiceIsThrottledInItsOwnShape(t *testing.T) {
	s, _, _ := start(t, Config{Seed: 7})
	latest, _ := s.LatestAMI(FamilyAL2023, VariantStandard, ArchX86_64)
	cases := []struct {
		service string
		code    string
		status  int
		call    func(context.Context, aws.Config) error
		// modelled checks the SDK decoded the service's modelled error type.
		modelled func(error) bool
	}{
		{service: ServiceEC2, code: "RequestLimitExceeded", status: http.StatusServiceUnavailable,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awsec2.NewFromConfig(cfg).DescribeSubnets(ctx, &awsec2.DescribeSubnetsInput{})
				return err
			}},
		{service: ServiceIAM, code: "Throttling", status: http.StatusBadRequest,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awsiam.NewFromConfig(cfg).GetRole(ctx, &awsiam.GetRoleInput{RoleName: aws.String(NodeRoleName(s.ClusterName()))})
				return err
			}},
		{service: ServiceSSM, code: "ThrottlingException", status: http.StatusBadRequest,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awsssm.NewFromConfig(cfg).GetParameter(ctx, &awsssm.GetParameterInput{Name: aws.String(latest.AliasParameter)})
				return err
			},
			modelled: func(err error) bool { var e *ssmtypes.ThrottlingException; return errors.As(err, &e) }},
		{service: ServicePricing, code: "ThrottlingException", status: http.StatusTooManyRequests,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awspricing.NewFromConfig(cfg).GetProducts(ctx, &awspricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1),
					Filters: []pricingtypes.Filter{{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String("instanceType"), Value: aws.String("m5.large")}}})
				return err
			},
			modelled: func(err error) bool { var e *pricingtypes.ThrottlingException; return errors.As(err, &e) }},
		{service: ServiceSQS, code: "RequestThrottled", status: http.StatusForbidden,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awssqs.NewFromConfig(cfg).GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(s.ClusterName())})
				return err
			},
			modelled: func(err error) bool { var e *sqstypes.RequestThrottled; return errors.As(err, &e) }},
		{service: ServiceEKS, code: "ThrottlingException", status: http.StatusTooManyRequests,
			call: func(ctx context.Context, cfg aws.Config) error {
				_, err := awseks.NewFromConfig(cfg).DescribeCluster(ctx, &awseks.DescribeClusterInput{Name: aws.String(s.ClusterName())})
				return err
			},
			modelled: func(err error) bool { var e *ekstypes.ThrottlingException; return errors.As(err, &e) }},
	}
	ctx := context.Background()
	base, err := s.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.service, func(t *testing.T) {
			if err := s.SetThrottle(c.service, 1); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.SetThrottle(c.service, 0) })

			// Retries off: one request, the service's code and status.
			cfg, n := counted(t, base, 1)
			err := c.call(ctx, cfg)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != c.code {
				t.Fatalf("without retries: %v; want %s", err, c.code)
			}
			var respErr *awshttp.ResponseError
			if !errors.As(err, &respErr) || respErr.HTTPStatusCode() != c.status {
				t.Errorf("without retries: %v; want HTTP %d", err, c.status)
			}
			if c.modelled != nil && !c.modelled(err) {
				t.Errorf("without retries: %T is not the service's modelled throttling error", apiErr)
			}
			if !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
				t.Errorf("aws-sdk-go-v2's retryer does not count %s as a throttle", c.code)
			}
			if got := n.count(); got != 1 {
				t.Errorf("without retries: %d requests, want 1", got)
			}

			// Every attempt throttled: the SDK retries up to MaxAttempts.
			cfg, n = counted(t, base, 3)
			err = c.call(ctx, cfg)
			var maxErr *retry.MaxAttemptsError
			if !errors.As(err, &maxErr) || !errors.As(err, &apiErr) || apiErr.ErrorCode() != c.code {
				t.Errorf("with retries: %v; want %s after the maximum attempts", err, c.code)
			}
			if got := n.count(); got != 3 {
				t.Errorf("with retries: %d requests, want 3", got)
			}

			// Throttling stops after the first answer: the retry succeeds.
			cfg, n = counted(t, base, 3)
			n.after = func(*http.Response) { _ = s.SetThrottle(c.service, 0) }
			if err := c.call(ctx, cfg); err != nil {
				t.Errorf("retry after throttling stopped: %v", err)
			}
			if got := n.count(); got != 2 {
				t.Errorf("retry after throttling stopped: %d requests, want 2", got)
			}
		})
	}
	if err := s.SetThrottle("sts", 1); err == nil {
		t.Errorf("throttling an unknown service succeeded")
	}
}

// TestThrottleRateIsAFraction checks a rate between 0 and 1 refuses some
// requests and lets the others through, and the same seed refuses the same
// ones.
func TestThrottleRateIsAFraction(t *testing.T) {
	run := func() []bool {
		s, cfg, _ := start(t, Config{Seed: 42})
		if err := s.SetThrottle(ServiceSSM, 0.5); err != nil {
			t.Fatal(err)
		}
		cfg, _ = counted(t, cfg, 1)
		latest, _ := s.LatestAMI(FamilyAL2023, VariantStandard, ArchX86_64)
		client := awsssm.NewFromConfig(cfg)
		var out []bool
		for range 40 {
			_, err := client.GetParameter(context.Background(), &awsssm.GetParameterInput{Name: aws.String(latest.AliasParameter)})
			var throttled *ssmtypes.ThrottlingException
			if err != nil && !errors.As(err, &throttled) {
				t.Fatalf("GetParameter: %v", err)
			}
			out = append(out, err != nil)
		}
		return out
	}
	first, second := run(), run()
	refused := 0
	for i := range first {
		if first[i] {
			refused++
		}
		if first[i] != second[i] {
			t.Fatalf("request %d: throttled %v with seed 42, then %v", i, first[i], second[i])
		}
	}
	if refused == 0 || refused == len(first) {
		t.Errorf("rate 0.5 refused %d of %d requests", refused, len(first))
	}
}
