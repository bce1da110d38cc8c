package awse2e

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// CallCounter serves the local AWS endpoint and counts its requests by
// "service:Action" (awsQuery Action, awsJson X-Amz-Target operation, or
// EKS method and path).
type CallCounter struct {
	next http.Handler
	mu   sync.Mutex
	n    map[string]int
}

// NewCallCounter returns a CallCounter in front of next.
func NewCallCounter(next http.Handler) *CallCounter {
	return &CallCounter{next: next, n: map[string]int{}}
}

// ServeHTTP counts the request and passes it on.
func (c *CallCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := actionOf(r)
	c.mu.Lock()
	c.n[key]++
	c.mu.Unlock()
	c.next.ServeHTTP(w, r)
}

// Snapshot returns the counts so far.
func (c *CallCounter) Snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}

// Since returns the counts served after the snapshot before.
func (c *CallCounter) Since(before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range c.Snapshot() {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// actionOf names a request's service and action; the body it reads is put back.
func actionOf(r *http.Request) string {
	service := "unknown"
	if auth := r.Header.Get("Authorization"); auth != "" {
		if _, cred, ok := strings.Cut(auth, "Credential="); ok {
			parts := strings.Split(strings.SplitN(cred, ",", 2)[0], "/")
			if len(parts) >= 4 {
				service = parts[3]
			}
		}
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		_, op, _ := strings.Cut(target, ".")
		return service + ":" + op
	}
	if r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
				return service + ":" + form.Get("Action")
			}
		}
	}
	return service + ":" + r.Method + " " + r.URL.Path
}
