// Package sigv4 reads the credential scope of an AWS Signature Version 4
// Authorization header. The local AWS endpoint (internal/localaws) refuses
// unsigned requests as AWS does and routes signed ones by the service named
// in their scope, so the real SDK clients' credential and region wiring is
// exercised end to end. Signatures are not verified: the endpoint holds no
// secrets, and what it proves is that a client signs, with which key, for
// which region and service.
package sigv4

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Algorithm is the only signing algorithm the endpoint accepts.
const Algorithm = "AWS4-HMAC-SHA256"

// ErrMissing says the request carries no Authorization header (AWS answers
// MissingAuthenticationToken, or MissingAuthenticationTokenException on the
// JSON protocols).
var ErrMissing = errors.New("request is missing Authentication Token")

// Credential is the scope a request was signed for:
// Credential=<AccessKeyID>/<Date>/<Region>/<Service>/aws4_request.
type Credential struct {
	AccessKeyID string
	Date        string
	Region      string
	Service     string
}

// Parse returns the credential scope of r's Authorization header. It returns
// ErrMissing when there is no header, and a descriptive error when the header
// is not a well-formed SigV4 authorization (AWS answers
// IncompleteSignature / InvalidSignatureException to those).
func Parse(r *http.Request) (Credential, error) {
	header := r.Header.Get("Authorization")
	if header == "" {
		return Credential{}, ErrMissing
	}
	algorithm, rest, ok := strings.Cut(header, " ")
	if !ok || algorithm != Algorithm {
		return Credential{}, fmt.Errorf("authorization header requires algorithm %s, got %q", Algorithm, algorithm)
	}
	var credential, signedHeaders, signature string
	for _, part := range strings.Split(rest, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch key {
		case "Credential":
			credential = value
		case "SignedHeaders":
			signedHeaders = value
		case "Signature":
			signature = value
		}
	}
	for name, value := range map[string]string{"Credential": credential, "SignedHeaders": signedHeaders, "Signature": signature} {
		if value == "" {
			return Credential{}, fmt.Errorf("authorization header requires '%s' parameter", name)
		}
	}
	fields := strings.Split(credential, "/")
	if len(fields) != 5 || fields[4] != "aws4_request" || fields[0] == "" || fields[2] == "" || fields[3] == "" {
		return Credential{}, fmt.Errorf("credential should be scoped to a valid region and service: %q is not <key>/<date>/<region>/<service>/aws4_request", credential)
	}
	return Credential{AccessKeyID: fields[0], Date: fields[1], Region: fields[2], Service: fields[3]}, nil
}
