package awsjson

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAuthenticate(t *testing.T) {
	signed := func(scope string) string {
		return "AWS4-HMAC-SHA256 Credential=AKID/20260101/" + scope + "/aws4_request, SignedHeaders=host, Signature=x"
	}
	cases := map[string]struct {
		header string
		want   *AuthFailure
	}{
		"ok":            {header: signed("us-east-1/ssm")},
		"missing":       {want: &AuthFailure{Code: "MissingAuthenticationToken", Message: "Request is missing Authentication Token"}},
		"malformed":     {header: "AWS4-HMAC-SHA256 Credential=AKID", want: &AuthFailure{Code: "IncompleteSignature"}},
		"other service": {header: signed("us-east-1/sqs"), want: &AuthFailure{Code: "SignatureDoesNotMatch", Message: "Credential should be scoped to correct service: 'ssm'. "}},
		"other region":  {header: signed("eu-west-1/ssm"), want: &AuthFailure{Code: "SignatureDoesNotMatch", Message: "Credential should be scoped to a valid region, not 'eu-west-1'. "}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			got := Authenticate(r, "ssm", "us-east-1")
			if got != nil && tc.want != nil && tc.want.Message == "" {
				got.Message = ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargetAndWriteError(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	r.Header.Set("X-Amz-Target", "AmazonSSM.GetParameter")
	if op, e := Target(r, "AmazonSSM"); op != "GetParameter" || e != nil {
		t.Fatalf("Target = %q, %v", op, e)
	}
	if _, e := Target(r, "AmazonSQS"); e == nil || e.Type != "UnknownOperationException" {
		t.Fatalf("Target(other prefix) = %v", e)
	}
	w := httptest.NewRecorder()
	WriteError(w, ContentType10, &Error{Status: 400, Type: "com.amazonaws.sqs#QueueDoesNotExist", Message: "m", QueryError: "AWS.SimpleQueueService.NonExistentQueue;Sender"})
	got := []string{w.Header().Get("Content-Type"), w.Header().Get("X-Amzn-Query-Error"), w.Header().Get("X-Amzn-ErrorType"), strings.TrimSpace(w.Body.String())}
	want := []string{ContentType10, "AWS.SimpleQueueService.NonExistentQueue;Sender", "", `{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"m"}`}
	if diff := cmp.Diff(want, got); diff != "" || w.Code != 400 {
		t.Errorf("status %d (-want +got):\n%s", w.Code, diff)
	}
}

func TestThrottle(t *testing.T) {
	var none *Throttle
	if none.Throttled() || none.Rate() != 0 {
		t.Errorf("a nil Throttle throttles")
	}
	th := NewThrottle(1)
	if th.Throttled() {
		t.Errorf("a new Throttle throttles")
	}
	th.SetRate(2)
	if th.Rate() != 1 || !th.Throttled() {
		t.Errorf("rate 2: Rate %v; want it clamped to 1 and every request throttled", th.Rate())
	}
	th.SetRate(-1)
	if th.Rate() != 0 || th.Throttled() {
		t.Errorf("rate -1: Rate %v; want it clamped to 0 and no request throttled", th.Rate())
	}
}
