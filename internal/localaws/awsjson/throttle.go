package awsjson

import (
	"math/rand/v2"
	"sync"
)

// ThrottleMessage is the message AWS's services send with a throttling
// error.
const ThrottleMessage = "Rate exceeded"

// Throttle refuses a set fraction of a service's requests, as AWS refuses
// requests beyond an account's request rate. Which requests are refused is
// drawn from a seeded source, so a test with a fixed seed sees the same
// sequence every run. A nil *Throttle never throttles. It is safe for
// concurrent use.
type Throttle struct {
	mu   sync.Mutex
	rate float64
	rng  *rand.Rand
}

// NewThrottle returns a Throttle that refuses nothing until SetRate is
// called; seed fixes which requests it refuses.
func NewThrottle(seed uint64) *Throttle {
	return &Throttle{rng: rand.New(rand.NewPCG(seed, 0x7e2))}
}

// SetRate sets the fraction (clamped to 0..1) of requests Throttled reports;
// 0 turns throttling off.
func (t *Throttle) SetRate(rate float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rate = min(max(rate, 0), 1)
}

// Rate is the fraction of requests being throttled.
func (t *Throttle) Rate() float64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// Throttled reports whether this request is to be refused.
func (t *Throttle) Throttled() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate > 0 && t.rng.Float64() < t.rate
}

// ThrottlingException is the throttling answer of the services whose model
// declares ThrottlingException (SSM with HTTP 400, the Price List and EKS
// with HTTP 429). aws-sdk-go-v2's retryer counts the code as a throttle
// (retry.DefaultThrottleErrorCodes).
func ThrottlingException(status int) *Error {
	return &Error{Status: status, Type: "ThrottlingException", Message: ThrottleMessage}
}
