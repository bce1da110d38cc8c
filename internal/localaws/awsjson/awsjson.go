// Package awsjson holds the request and error plumbing shared by the local
// AWS endpoint's JSON-protocol services (internal/localaws/ssm, pricing, sqs
// and eks): the SigV4 scope check every AWS service applies before it reads a
// request, throttling ([Throttle]) right after it, the X-Amz-Target dispatch of the awsJson1_0/awsJson1_1 protocols,
// body decoding, and the `{"__type":..,"message":..}` error documents the
// aws-sdk-go-v2 deserializers read.
//
// The query-protocol IAM service uses [Authenticate] and [Throttle] too and
// renders its result as XML itself.
package awsjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dovetail-autoscaler/dovetail/internal/localaws/sigv4"
)

// Content types of the JSON protocols.
const (
	// ContentType10 is the awsJson1_0 media type (SQS).
	ContentType10 = "application/x-amz-json-1.0"
	// ContentType11 is the awsJson1_1 media type (SSM, Pricing).
	ContentType11 = "application/x-amz-json-1.1"
	// ContentTypeREST is the restJson1 media type (EKS).
	ContentTypeREST = "application/json"
)

// Error is an AWS error answer. Type is the error code the SDK matches
// (written as `__type`, and as the X-Amzn-ErrorType header on restJson1);
// QueryError, when set, is the `x-amzn-query-error` header value
// ("<code>;Sender") of services that keep their awsQuery error codes (SQS).
type Error struct {
	// Status is the HTTP status.
	Status int
	// Type is the `__type` error code.
	Type string
	// Message is the human-readable message.
	Message string
	// QueryError is the x-amzn-query-error header value, if any.
	QueryError string
	// Fields are extra members of the error shape (EKS's clusterName, ...).
	Fields map[string]string
}

// Error implements error.
func (e *Error) Error() string { return e.Type + ": " + e.Message }

// Errorf returns an Error with a formatted message.
func Errorf(status int, typ, format string, args ...any) *Error {
	return &Error{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
}

// AuthFailure is why [Authenticate] refused a request, in the names the
// awsQuery protocol uses (MissingAuthenticationToken, IncompleteSignature,
// SignatureDoesNotMatch); the JSON protocols append "Exception"
// (SignatureDoesNotMatch becomes InvalidSignatureException).
type AuthFailure struct {
	// Code is the awsQuery error code.
	Code string
	// Message is AWS's message for it.
	Message string
}

// Authenticate applies the checks AWS makes before it reads a request: a
// SigV4 Authorization header must be present (else MissingAuthenticationToken)
// and well formed (else IncompleteSignature), and its credential scope must
// name this service and region (else SignatureDoesNotMatch, with AWS's
// "Credential should be scoped to ..." message). AWS answers all of them with
// HTTP 403. Signatures themselves are not verified (see package sigv4).
func Authenticate(r *http.Request, service, region string) *AuthFailure {
	cred, err := sigv4.Parse(r)
	switch {
	case errors.Is(err, sigv4.ErrMissing):
		return &AuthFailure{Code: "MissingAuthenticationToken", Message: "Request is missing Authentication Token"}
	case err != nil:
		return &AuthFailure{Code: "IncompleteSignature", Message: err.Error()}
	case cred.Service != service:
		return &AuthFailure{Code: "SignatureDoesNotMatch", Message: fmt.Sprintf("Credential should be scoped to correct service: '%s'. ", service)}
	case cred.Region != region:
		return &AuthFailure{Code: "SignatureDoesNotMatch", Message: fmt.Sprintf("Credential should be scoped to a valid region, not '%s'. ", cred.Region)}
	}
	return nil
}

// JSONAuthError converts f to the JSON protocols' error (HTTP 403).
func JSONAuthError(f *AuthFailure) *Error {
	typ := f.Code + "Exception"
	if f.Code == "SignatureDoesNotMatch" {
		typ = "InvalidSignatureException"
	}
	return &Error{Status: http.StatusForbidden, Type: typ, Message: f.Message}
}

var requestSeq atomic.Uint64

// RequestID returns a fresh request ID in the UUID layout AWS uses; it is
// unique within the process, not random.
func RequestID() string {
	n := requestSeq.Add(1)
	return fmt.Sprintf("00000000-0000-4000-8000-%012x", n)
}

// Target checks an awsJson request: method POST and an X-Amz-Target header
// "<prefix>.<Operation>". It returns the operation name, or the error AWS
// answers (UnknownOperationException, HTTP 400).
func Target(r *http.Request, prefix string) (string, *Error) {
	target := r.Header.Get("X-Amz-Target")
	p, op, ok := strings.Cut(target, ".")
	if r.Method != http.MethodPost || !ok || p != prefix || op == "" {
		return "", &Error{Status: http.StatusBadRequest, Type: "UnknownOperationException"}
	}
	return op, nil
}

// maxBody bounds the request bodies the endpoint reads.
const maxBody = 8 << 20

// Decode reads r's JSON body into v. An empty body decodes as {}. A body that
// is not JSON of the operation's shape is a SerializationException (HTTP 400),
// as the awsJson services answer.
func Decode(r *http.Request, v any) *Error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return Errorf(http.StatusBadRequest, "SerializationException", "reading request body: %v", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return Errorf(http.StatusBadRequest, "SerializationException", "%v", err)
	}
	return nil
}

// WriteJSON writes a success answer of the given content type.
func WriteJSON(w http.ResponseWriter, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		WriteError(w, contentType, Errorf(http.StatusInternalServerError, "InternalFailure", "encoding response: %v", err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-RequestId", RequestID())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// WriteError writes e as `{"__type":..,"message":..}`, with the
// X-Amzn-ErrorType header on restJson1 answers (as EKS sends it) and, when
// set, x-amzn-query-error.
func WriteError(w http.ResponseWriter, contentType string, e *Error) {
	doc := map[string]string{"__type": e.Type}
	for k, v := range e.Fields {
		doc[k] = v
	}
	if e.Message != "" {
		doc["message"] = e.Message
	}
	body, _ := json.Marshal(doc)
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-RequestId", RequestID())
	if contentType == ContentTypeREST {
		h.Set("X-Amzn-ErrorType", e.Type)
	}
	if e.QueryError != "" {
		h.Set("X-Amzn-Query-Error", e.QueryError)
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

// Protocol describes one JSON-protocol service for Serve.
type Protocol struct {
	// Service is the SigV4 signing name, e.g. "ssm".
	Service string
	// Region is the region requests must be signed for.
	Region string
	// ContentType is ContentType10 or ContentType11.
	ContentType string
	// TargetPrefix is the X-Amz-Target prefix, e.g. "AmazonSSM".
	TargetPrefix string
	// Throttle, when set, refuses a fraction of the authenticated requests
	// with ThrottleError before they are dispatched.
	Throttle *Throttle
	// ThrottleError is the service's throttling answer (default
	// ThrottlingException with HTTP 400).
	ThrottleError *Error
}

// Operation answers one operation: the response body, or an error.
type Operation func(*http.Request) (any, *Error)

// Serve answers a request as an AWS JSON-protocol service does: it refuses
// unsigned or mis-scoped requests, then throttled ones (p.Throttle), dispatches
// on X-Amz-Target to ops (UnknownOperationException for any other operation)
// and writes the answer or the error in the protocol's shape.
func Serve(w http.ResponseWriter, r *http.Request, p Protocol, ops map[string]Operation) {
	if f := Authenticate(r, p.Service, p.Region); f != nil {
		WriteError(w, p.ContentType, JSONAuthError(f))
		return
	}
	if p.Throttle.Throttled() {
		e := p.ThrottleError
		if e == nil {
			e = ThrottlingException(http.StatusBadRequest)
		}
		WriteError(w, p.ContentType, e)
		return
	}
	name, e := Target(r, p.TargetPrefix)
	if e != nil {
		WriteError(w, p.ContentType, e)
		return
	}
	op, ok := ops[name]
	if !ok {
		WriteError(w, p.ContentType, &Error{Status: http.StatusBadRequest, Type: "UnknownOperationException"})
		return
	}
	out, e := op(r)
	if e != nil {
		WriteError(w, p.ContentType, e)
		return
	}
	WriteJSON(w, p.ContentType, out)
}
