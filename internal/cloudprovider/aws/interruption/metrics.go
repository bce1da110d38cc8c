package interruption

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// MessageTypeMalformed is the message_type label of messages Parse rejects.
const MessageTypeMalformed = "malformed"

// metrics are the controller's own collectors, named as Karpenter's.
type metrics struct {
	received      *prometheus.CounterVec
	deleted       prometheus.Counter
	queueDuration prometheus.Histogram
}

func newMetrics() *metrics {
	return &metrics{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "karpenter", Subsystem: "interruption", Name: "received_messages_total",
			Help: "Interruption messages received from the queue, by message type.",
		}, []string{"message_type"}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "karpenter", Subsystem: "interruption", Name: "deleted_messages_total",
			Help: "Interruption messages deleted from the queue.",
		}),
		queueDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "karpenter", Subsystem: "interruption", Name: "message_queue_duration_seconds",
			Help:    "Time from an interruption message's arrival on the queue (SentTimestamp) to its handling.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}),
	}
}

// register registers the collectors, adopting ones registered before (a
// second controller on the same registry shares the series).
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	var err error
	m.received, err = registerOrExisting(reg, m.received)
	if err != nil {
		return err
	}
	if m.deleted, err = registerOrExisting(reg, m.deleted); err != nil {
		return err
	}
	m.queueDuration, err = registerOrExisting(reg, m.queueDuration)
	return err
}

func registerOrExisting[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, fmt.Errorf("registering interruption metrics: %w", err)
}
