package localaws

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/ec2"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sigv4"
)

// Service names as they appear in a SigV4 credential scope.
const (
	ServiceEC2     = "ec2"
	ServiceIAM     = "iam"
	ServiceSSM     = "ssm"
	ServicePricing = "pricing"
	ServiceSQS     = "sqs"
	ServiceEKS     = "eks"
)

// iamAPIVersion is the Version IAM's awsQuery requests carry.
const iamAPIVersion = "2010-05-08"

// maxFormBody bounds how much of an unsigned form body is read to route it.
const maxFormBody = 1 << 20

// ServeHTTP routes a request to the service named in its SigV4 credential
// scope. A request without a usable scope (unsigned, malformed, or naming a
// service the endpoint does not have) is routed by its shape instead, so that
// the service itself refuses it with its own error, as AWS does.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	service := ""
	if cred, err := sigv4.Parse(r); err == nil {
		service = cred.Service
	}
	h := s.handler(service)
	if h == nil {
		service = serviceByShape(r)
		h = s.handler(service)
	}
	if h == nil {
		s.cfg.Logger.V(1).Info("request for no known service", "method", r.Method, "path", r.URL.Path)
		writeUnknownService(w, r)
		return
	}
	h.ServeHTTP(w, r)
}

// handler returns the service named by a credential scope, nil for none.
func (s *Server) handler(service string) http.Handler {
	switch service {
	case ServiceEC2:
		return s.ec2
	case ServiceIAM:
		return s.iam
	case ServiceSSM:
		return s.ssm
	case ServicePricing:
		return s.pricing
	case ServiceSQS:
		return s.sqs
	case ServiceEKS:
		return s.eks
	}
	return nil
}

// serviceByShape names the service whose wire protocol r follows: the
// awsQuery Version (EC2 2016-11-15, IAM 2010-05-08), the awsJson
// X-Amz-Target prefix (SSM, Price List, SQS) or EKS's /clusters paths. It
// returns "" when r looks like none of them. The body it reads is put back.
func serviceByShape(r *http.Request) string {
	target := r.Header.Get("X-Amz-Target")
	switch {
	case strings.HasPrefix(target, "AmazonSSM."):
		return ServiceSSM
	case strings.HasPrefix(target, "AWSPriceListService."):
		return ServicePricing
	case strings.HasPrefix(target, "AmazonSQS."):
		return ServiceSQS
	case r.URL.Path == "/clusters" || strings.HasPrefix(r.URL.Path, "/clusters/"):
		return ServiceEKS
	}
	version := r.URL.Query().Get("Version")
	if form := formBody(r); form != nil && form.Get("Version") != "" {
		version = form.Get("Version")
	}
	switch version {
	case ec2.APIVersion:
		return ServiceEC2
	case iamAPIVersion:
		return ServiceIAM
	}
	return ""
}

// formBody parses a form-encoded body and restores it for the service.
func formBody(r *http.Request) url.Values {
	if r.Body == nil {
		return nil
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/x-www-form-urlencoded" {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxFormBody))
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return nil
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil
	}
	return form
}

// writeUnknownService answers a request no service can take. There is no
// single AWS answer to copy (each service has its own host); this one says
// what the endpoint routes on.
func writeUnknownService(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"__type": "UnknownServiceException",
		"message": "the local AWS endpoint serves ec2, iam, ssm, pricing, sqs and eks; " + r.Method + " " + r.URL.Path +
			" is signed for none of them and looks like none of their requests",
	})
}
