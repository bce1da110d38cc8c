package awse2e

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
)

// CallCounter serves the local AWS endpoint and counts its requests by
// "service:Action" (awsQuery Action, awsJson X-Amz-Target operation, or
// EKS method and path). A Hold armed with HoldNext lets one matching
// request through to the endpoint and then keeps its response back.
type CallCounter struct {
	next  http.Handler
	mu    sync.Mutex
	n     map[string]int
	holds []*Hold
}

// NewCallCounter returns a CallCounter in front of next.
func NewCallCounter(next http.Handler) *CallCounter {
	return &CallCounter{next: next, n: map[string]int{}}
}

// ServeHTTP counts the request and passes it on, or, when it is the one an
// armed Hold waits for, serves it through the hold.
func (c *CallCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, form := actionOf(r)
	c.mu.Lock()
	c.n[key]++
	var hold *Hold
	for i, h := range c.holds {
		if h.action == key && (h.match == nil || h.match(form)) {
			hold = h
			c.holds = append(c.holds[:i:i], c.holds[i+1:]...)
			break
		}
	}
	c.mu.Unlock()
	if hold != nil {
		hold.serve(c.next, w, r)
		return
	}
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

// HoldNext arms a one-shot hold on the next request of action
// ("ec2:CreateFleet") whose form parameters match accepts (nil: any): the
// endpoint serves that request in full (EC2 launches the instances), then
// its response is held back from the client until Release, or dropped
// when the request's context ends first (the client gave up or its process
// died). Every other request passes as usual, held or not.
func (c *CallCounter) HoldNext(action string, match func(url.Values) bool) *Hold {
	h := &Hold{action: action, match: match, served: make(chan struct{}), release: make(chan struct{}), done: make(chan struct{})}
	c.mu.Lock()
	c.holds = append(c.holds, h)
	c.mu.Unlock()
	return h
}

// Disarm removes the hold if no request has reached it yet.
func (c *CallCounter) Disarm(h *Hold) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, armed := range c.holds {
		if armed == h {
			c.holds = append(c.holds[:i:i], c.holds[i+1:]...)
			return
		}
	}
}

// Hold is a one-shot hold on one request's response; see HoldNext.
type Hold struct {
	action  string
	match   func(url.Values) bool
	served  chan struct{}
	release chan struct{}
	once    sync.Once
	done    chan struct{}

	// Set before served is closed.
	status int
	body   []byte
	// Set before done is closed.
	delivered  bool
	deliverErr error
}

// Served is closed once the endpoint has served the held request; its
// response is then held until Release.
func (h *Hold) Served() <-chan struct{} { return h.served }

// Response is what the endpoint answered the held request; it waits for
// Served.
func (h *Hold) Response() (status int, body []byte) {
	<-h.served
	return h.status, h.body
}

// Release lets the held response go to the client if it still waits for it
// (calling it again does nothing). It does not wait; Done does.
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

// Done is closed once the held response was written to the client or
// dropped because the request's context ended.
func (h *Hold) Done() <-chan struct{} { return h.done }

// Delivered reports, after Done, whether the client got the response, and
// the write error if writing it failed.
func (h *Hold) Delivered() (bool, error) {
	<-h.done
	return h.delivered, h.deliverErr
}

// serve passes the request to next, recording the response, reports it
// served, and writes it to w once released, unless the request's context
// ends first.
func (h *Hold) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	defer close(h.done)
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	h.status, h.body = rec.Code, rec.Body.Bytes()
	close(h.served)
	select {
	case <-h.release:
	case <-r.Context().Done():
		return
	}
	if r.Context().Err() != nil {
		return
	}
	maps.Copy(w.Header(), rec.Header())
	w.WriteHeader(rec.Code)
	_, h.deliverErr = w.Write(h.body)
	h.delivered = h.deliverErr == nil
}

// HasTag accepts an EC2 query request that tags something key=value
// (TagSpecification.N.Tag.M.Key and .Value), for HoldNext.
func HasTag(key, value string) func(url.Values) bool {
	return func(form url.Values) bool {
		for k, v := range form {
			if strings.HasSuffix(k, ".Key") && len(v) == 1 && v[0] == key &&
				form.Get(strings.TrimSuffix(k, ".Key")+".Value") == value {
				return true
			}
		}
		return false
	}
}

// actionOf names a request's service and action, and returns the form of
// an awsQuery or ec2Query request; the body it reads is put back.
func actionOf(r *http.Request) (string, url.Values) {
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
		return service + ":" + op, nil
	}
	if r.Body != nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		body, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err == nil {
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("Action") != "" {
				return service + ":" + form.Get("Action"), form
			}
		}
	}
	return service + ":" + r.Method + " " + r.URL.Path, nil
}
