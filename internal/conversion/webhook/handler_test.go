package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion"
)

const (
	v1beta1NodePool = `{"apiVersion":"karpenter.sh/v1beta1","kind":"NodePool","metadata":{"name":"default","uid":"u1"},
		"spec":{"template":{"spec":{"requirements":[],"nodeClassRef":{"name":"default"},
		"kubelet":{"maxPods":20}}},"disruption":{"consolidationPolicy":"WhenUnderutilized","expireAfter":"24h"}}}`
	v1beta1NodeClaim = `{"apiVersion":"karpenter.sh/v1beta1","kind":"NodeClaim","metadata":{"name":"%s","labels":{"karpenter.sh/nodepool":"default"}},
		"spec":{"requirements":[],"nodeClassRef":{"name":"default"}}}`
	badV1Fields = `{"apiVersion":"karpenter.sh/v1beta1","kind":"NodeClaim","metadata":{"name":"bad",
		"annotations":{"compatibility.karpenter.sh/v1-fields":"{not json"}},"spec":{"requirements":[],"nodeClassRef":{"name":"default"}}}`
	badKubelet = `{"apiVersion":"karpenter.sh/v1","kind":"NodeClaim","metadata":{"name":"bad-kubelet",
		"annotations":{"compatibility.karpenter.sh/v1beta1-kubelet-conversion":"[1,2"}},
		"spec":{"requirements":[],"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"expireAfter":"720h"}}`
)

// countingPools is a NodePoolGetter over fixed NodePools that counts lookups.
type countingPools struct {
	mu    sync.Mutex
	pools map[string]*v1.NodePool
	err   error
	calls int
}

func (c *countingPools) GetNodePool(_ context.Context, name string) (*v1.NodePool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.err != nil {
		return nil, c.err
	}
	if pool, ok := c.pools[name]; ok {
		return pool, nil
	}
	return nil, apierrors.NewNotFound(v1.SchemeGroupVersion.WithResource("nodepools").GroupResource(), name)
}

func review(desired string, objects ...string) string {
	r := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("review-1"), DesiredAPIVersion: desired},
	}
	for _, o := range objects {
		r.Request.Objects = append(r.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// converted is what a test checks of a converted object.
type converted struct {
	APIVersion  string
	Name        string
	ExpireAfter string
	Kubelet     string
}

func TestHandlerConverts(t *testing.T) {
	t.Parallel()
	pool := &v1.NodePool{}
	pool.Name = "default"
	pool.Spec.Template.Spec.ExpireAfter = v1.MustParseNillableDuration("24h")
	nodeClaim := func(name string) string { return strings.Replace(v1beta1NodeClaim, "%s", name, 1) }
	cases := map[string]struct {
		review    string
		want      []converted
		wantCalls int
	}{
		"a v1beta1 NodePool to v1": {
			review: review("karpenter.sh/v1", v1beta1NodePool),
			want:   []converted{{APIVersion: "karpenter.sh/v1", Name: "default", ExpireAfter: "24h", Kubelet: `{"maxPods":20}`}},
		},
		"NodeClaims of one NodePool read it once per review": {
			review:    review("karpenter.sh/v1", nodeClaim("a"), nodeClaim("b"), nodeClaim("c")),
			want:      []converted{{"karpenter.sh/v1", "a", "24h", ""}, {"karpenter.sh/v1", "b", "24h", ""}, {"karpenter.sh/v1", "c", "24h", ""}},
			wantCalls: 1,
		},
		"an object already at the desired version": {
			review: review("karpenter.sh/v1beta1", nodeClaim("a")),
			want:   []converted{{APIVersion: "karpenter.sh/v1beta1", Name: "a"}},
		},
		"an empty review": {
			review: review("karpenter.sh/v1"),
			want:   []converted{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pools := &countingPools{pools: map[string]*v1.NodePool{"default": pool}}
			h := &Handler{Converter: conversion.Converter{NodePools: pools}}
			response := serve(t, h, tc.review)
			if response.Result.Status != metav1.StatusSuccess {
				t.Fatalf("result %+v, want Success", response.Result)
			}
			if response.UID != "review-1" {
				t.Errorf("response UID %q, want the request's", response.UID)
			}
			got := []converted{}
			for _, raw := range response.ConvertedObjects {
				var o struct {
					APIVersion string            `json:"apiVersion"`
					Metadata   metav1.ObjectMeta `json:"metadata"`
					Spec       struct {
						ExpireAfter string `json:"expireAfter"`
						Template    struct {
							Spec struct {
								ExpireAfter string `json:"expireAfter"`
							} `json:"spec"`
						} `json:"template"`
					} `json:"spec"`
				}
				if err := json.Unmarshal(raw.Raw, &o); err != nil {
					t.Fatalf("decoding converted object: %v", err)
				}
				got = append(got, converted{
					APIVersion: o.APIVersion, Name: o.Metadata.Name,
					ExpireAfter: o.Spec.ExpireAfter + o.Spec.Template.Spec.ExpireAfter,
					Kubelet:     o.Metadata.Annotations[v1.KubeletCompatibilityAnnotationKey],
				})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("converted objects mismatch (-want +got):\n%s", diff)
			}
			if pools.calls != tc.wantCalls {
				t.Errorf("NodePool lookups: %d, want %d", pools.calls, tc.wantCalls)
			}
		})
	}
}

func TestHandlerFailures(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		review  string
		poolErr error
		// wantMessage are parts of the failure message, in order.
		wantMessage []string
	}{
		"malformed v1-fields on a v1beta1 NodeClaim": {
			review:      review("karpenter.sh/v1", badV1Fields),
			wantMessage: []string{`converting to karpenter.sh/v1: object 0 (karpenter.sh/v1beta1 NodeClaim "bad")`, `compatibility.karpenter.sh/v1-fields`},
		},
		"malformed kubelet annotation on a v1 NodeClaim": {
			review:      review("karpenter.sh/v1beta1", badKubelet),
			wantMessage: []string{`object 0 (karpenter.sh/v1 NodeClaim "bad-kubelet")`, `compatibility.karpenter.sh/v1beta1-kubelet-conversion`},
		},
		"every failing object is named": {
			review:      review("karpenter.sh/v1", v1beta1NodePool, badV1Fields, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`),
			wantMessage: []string{`object 1 (karpenter.sh/v1beta1 NodeClaim "bad")`, `object 2 (v1 Pod "p")`, "not a NodePool, NodeClaim or EC2NodeClass"},
		},
		"an undecodable object": {
			review:      review("karpenter.sh/v1", `"just a string"`),
			wantMessage: []string{"object 0 (undecodable object)"},
		},
		"an unserved target version": {
			review:      review("karpenter.sh/v1alpha5", v1beta1NodePool),
			wantMessage: []string{`object 0 (karpenter.sh/v1beta1 NodePool "default")`, "served versions are karpenter.sh/v1beta1 and karpenter.sh/v1"},
		},
		"the NodePool cannot be read": {
			review:      review("karpenter.sh/v1", strings.Replace(v1beta1NodeClaim, "%s", "a", 1)),
			poolErr:     errors.New("connection refused"),
			wantMessage: []string{`object 0 (karpenter.sh/v1beta1 NodeClaim "a")`, `getting NodePool "default": connection refused`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := &Handler{Converter: conversion.Converter{NodePools: &countingPools{err: tc.poolErr}}}
			response := serve(t, h, tc.review)
			if response.Result.Status != metav1.StatusFailure || len(response.ConvertedObjects) != 0 {
				t.Fatalf("result %+v with %d objects, want Failure and none", response.Result, len(response.ConvertedObjects))
			}
			rest := response.Result.Message
			for _, part := range tc.wantMessage {
				i := strings.Index(rest, part)
				if i < 0 {
					t.Fatalf("failure message %q lacks %q (in order)", response.Result.Message, part)
				}
				rest = rest[i+len(part):]
			}
		})
	}
}

func TestHandlerRejectsBadRequests(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		method, contentType, body string
		wantStatus                int
		wantBody                  string
	}{
		"GET":             {method: http.MethodGet, contentType: "application/json", wantStatus: http.StatusMethodNotAllowed, wantBody: "method GET, want POST"},
		"YAML":            {method: http.MethodPost, contentType: "application/yaml", body: "{}", wantStatus: http.StatusUnsupportedMediaType, wantBody: `content type "application/yaml"`},
		"not JSON":        {method: http.MethodPost, contentType: "application/json", body: "{", wantStatus: http.StatusBadRequest, wantBody: "decoding conversion review"},
		"another kind":    {method: http.MethodPost, contentType: "application/json", body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantStatus: http.StatusBadRequest, wantBody: "want apiextensions.k8s.io/v1 ConversionReview"},
		"v1beta1 review":  {method: http.MethodPost, contentType: "application/json", body: `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","request":{}}`, wantStatus: http.StatusBadRequest, wantBody: "want apiextensions.k8s.io/v1 ConversionReview"},
		"no request":      {method: http.MethodPost, contentType: "application/json", body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`, wantStatus: http.StatusBadRequest, wantBody: "no request"},
		"charset is fine": {method: http.MethodPost, contentType: "application/json; charset=utf-8", body: review("karpenter.sh/v1"), wantStatus: http.StatusOK},
		"no content type": {method: http.MethodPost, body: review("karpenter.sh/v1"), wantStatus: http.StatusUnsupportedMediaType, wantBody: "want application/json"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(tc.method, Path, strings.NewReader(tc.body))
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rec := httptest.NewRecorder()
			(&Handler{}).ServeHTTP(rec, req)
			if rec.Code != tc.wantStatus {
				t.Errorf("status %d, want %d (body %q)", rec.Code, tc.wantStatus, rec.Body.String())
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body %q lacks %q", rec.Body.String(), tc.wantBody)
			}
		})
	}
}

// serve posts body to h and decodes the ConversionReview answer.
func serve(t *testing.T, h http.Handler, body string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body.String())
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q, want application/json", ct)
	}
	out := &apiextensionsv1.ConversionReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
		t.Fatalf("decoding response: %v", err)
	}
	if out.APIVersion != "apiextensions.k8s.io/v1" || out.Kind != "ConversionReview" || out.Request != nil || out.Response == nil {
		t.Fatalf("response is not a v1 ConversionReview with only a response: %s", rec.Body.String())
	}
	return out.Response
}
