package v1

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		"hours":             {in: "720h", want: 720 * time.Hour},
		"mixed":             {in: "1h30m", want: 90 * time.Minute},
		"days":              {in: "30d", want: 30 * 24 * time.Hour},
		"days and hours":    {in: "1d12h", want: 36 * time.Hour},
		"zero":              {in: "0s", want: 0},
		"fractional days":   {in: "1.5d", wantErr: true},
		"word":              {in: "soon", wantErr: true},
		"days then garbage": {in: "1dx", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseDuration(%q) error = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ParseDuration(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestNillableDurationJSONRoundTrip(t *testing.T) {
	for _, text := range []string{"10h", "720h0m0s", "Never", "0s", "30d"} {
		var d NillableDuration
		if err := json.Unmarshal([]byte(`"`+text+`"`), &d); err != nil {
			t.Fatalf("unmarshal %q: %v", text, err)
		}
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != `"`+text+`"` {
			t.Errorf("round trip of %q gave %s", text, out)
		}
		if (text == Never) != d.IsNever() {
			t.Errorf("IsNever(%q) = %v", text, d.IsNever())
		}
	}
	if out, _ := json.Marshal(NewNillableDuration(90 * time.Second)); string(out) != `"1m30s"` {
		t.Errorf("NewNillableDuration(90s) marshals as %s", out)
	}
	var d NillableDuration
	if err := json.Unmarshal([]byte(`42`), &d); err == nil {
		t.Error("a JSON number was accepted as a duration")
	}
}

func TestDurationJSONRoundTrip(t *testing.T) {
	var d Duration
	if err := json.Unmarshal([]byte(`"1d"`), &d); err != nil {
		t.Fatal(err)
	}
	if d.Duration != 24*time.Hour {
		t.Errorf("1d parsed as %v", d.Duration)
	}
	if out, _ := json.Marshal(d); string(out) != `"1d"` {
		t.Errorf("1d marshals as %s", out)
	}
	if err := json.Unmarshal([]byte(`"Never"`), &d); err == nil {
		t.Error("Never was accepted as a Duration")
	}
}
