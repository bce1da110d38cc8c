// Package awsclient holds what every aws-sdk-go-v2 client of Dovetail's
// shares, whichever side it is on: the AWS provider's clients and the
// tests and tools that drive the local AWS endpoint.
package awsclient

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
)

// BufferRequestBodies wraps an SDK client's transport (nil: the default
// transport) so that every request body is read into memory before it is
// sent. Use it for the HTTPClient of SDK clients that may talk to a local
// endpoint:
//
//	HTTPClient: &http.Client{Transport: awsclient.BufferRequestBodies(nil)}
//
// Why: smithy-go closes its request-body wrapper as soon as the response
// headers arrive, and the closed wrapper's WriteTo returns io.EOF. net/http
// reads the body once more after sending it (to check its length); when a
// local endpoint answers before that read, the read fails, the transport
// closes the connection and reading the response body fails with "use of
// closed network connection". Real AWS answers too slowly to hit this; a
// local endpoint hits it often on large responses. With the body in a
// bytes.Reader the extra read never fails. Requests are not otherwise
// changed: the signature covers the same bytes.
func BufferRequestBodies(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return bufferingTransport{base: base}
}

// bufferingTransport is BufferRequestBodies' RoundTripper.
type bufferingTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t bufferingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return t.base.RoundTrip(r)
	}
	b, err := io.ReadAll(r.Body)
	closeErr := r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("buffering the request body: %w", err)
	}
	if closeErr != nil {
		return nil, fmt.Errorf("closing the request body: %w", closeErr)
	}
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	r.ContentLength = int64(len(b))
	return t.base.RoundTrip(r)
}
