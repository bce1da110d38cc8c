package operator

import (
	"strings"
	"testing"
	"time"
)

func TestDisruptionOptions(t *testing.T) {
	cases := map[string]struct {
		args      []string
		env       map[string]string
		wantDelay time.Duration
		wantLimit time.Duration
		wantErr   string
	}{
		"defaults":              {wantDelay: 15 * time.Second, wantLimit: 10 * time.Minute},
		"flags":                 {args: []string{"--disruption-validation-delay=1s", "--disruption-replacement-timeout=30s"}, wantDelay: time.Second, wantLimit: 30 * time.Second},
		"environment":           {env: map[string]string{"DISRUPTION_VALIDATION_DELAY": "0s", "DISRUPTION_REPLACEMENT_TIMEOUT": "1h"}, wantDelay: 0, wantLimit: time.Hour},
		"negative delay":        {args: []string{"--disruption-validation-delay=-1s"}, wantErr: "--disruption-validation-delay must not be negative"},
		"zero replacement time": {args: []string{"--disruption-replacement-timeout=0s"}, wantErr: "--disruption-replacement-timeout must be positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if o.DisruptionValidationDelay != tc.wantDelay || o.DisruptionReplacementTimeout != tc.wantLimit {
				t.Errorf("delay %v timeout %v, want %v %v", o.DisruptionValidationDelay, o.DisruptionReplacementTimeout, tc.wantDelay, tc.wantLimit)
			}
		})
	}
}
