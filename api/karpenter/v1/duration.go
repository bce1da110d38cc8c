package v1

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Never is the value of a NillableDuration that disables the behaviour it controls.
const Never = "Never"

// ParseDuration parses a Go duration ("90s", "1h30m") that may also use a "d"
// unit of 24 hours ("30d", "1d12h"). Karpenter's documents write durations in
// days, so Dovetail accepts them; everything Karpenter accepts means the same.
func ParseDuration(s string) (time.Duration, error) {
	if !strings.Contains(s, "d") {
		return time.ParseDuration(s)
	}
	days, rest, _ := strings.Cut(s, "d")
	n, err := strconv.ParseInt(days, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid duration %q: days must be a whole number", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q: %w", s, err)
		}
		d += r
	}
	return d, nil
}

// NillableDuration is a duration that may also be the string "Never". It keeps
// the text it was parsed from so that "10h" is written back as "10h" and
// objects round-trip through every API version unchanged. The zero value
// means Never.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h|d))+|Never)$`
type NillableDuration struct {
	// Duration is nil when the value is Never.
	Duration *time.Duration `json:"-"`
	// raw is the text the value was parsed from, if any.
	raw string
}

// MustParseNillableDuration parses a duration or "Never" and panics on error.
// It is meant for defaults and tests, where the input is a constant.
func MustParseNillableDuration(s string) NillableDuration {
	d, err := ParseNillableDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// ParseNillableDuration parses a duration (see ParseDuration) or "Never".
func ParseNillableDuration(s string) (NillableDuration, error) {
	if s == Never {
		return NillableDuration{raw: s}, nil
	}
	d, err := ParseDuration(s)
	if err != nil {
		return NillableDuration{}, fmt.Errorf("parsing duration %q: %w", s, err)
	}
	return NillableDuration{Duration: &d, raw: s}, nil
}

// NewNillableDuration returns a NillableDuration holding d.
func NewNillableDuration(d time.Duration) NillableDuration {
	return NillableDuration{Duration: &d}
}

// IsNever reports whether the value is "Never" (or unset).
func (d NillableDuration) IsNever() bool { return d.Duration == nil }

// String returns the text form: the parsed text when known, else the Go form.
func (d NillableDuration) String() string {
	if d.raw != "" {
		return d.raw
	}
	if d.Duration == nil {
		return Never
	}
	return d.Duration.String()
}

// MarshalJSON writes the duration as a JSON string.
func (d NillableDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(d.String())
}

// UnmarshalJSON reads a JSON string holding a duration or "Never".
func (d *NillableDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	parsed, err := ParseNillableDuration(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// ToUnstructured lets apimachinery's unstructured converter write the string form.
func (d NillableDuration) ToUnstructured() any { return d.String() }

// Duration is a length of time written as a Go duration that may also use the
// "d" unit (see ParseDuration). Like NillableDuration it keeps its text.
//
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h|d))+$`
type Duration struct {
	time.Duration `json:"-"`
	// raw is the text the value was parsed from, if any.
	raw string
}

// NewDuration returns a Duration holding d.
func NewDuration(d time.Duration) Duration { return Duration{Duration: d} }

// String returns the text form: the parsed text when known, else the Go form.
func (d Duration) String() string {
	if d.raw != "" {
		return d.raw
	}
	return d.Duration.String()
}

// MarshalJSON writes the duration as a JSON string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a JSON string holding a duration.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string: %w", err)
	}
	parsed, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration{Duration: parsed, raw: s}
	return nil
}

// ToUnstructured lets apimachinery's unstructured converter write the string form.
func (d Duration) ToUnstructured() any { return d.String() }
