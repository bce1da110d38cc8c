package interruption

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func readBody(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return string(b)
}

func TestParseDocumentedBodies(t *testing.T) {
	jan1 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		file   string
		kind   Kind
		ids    []string
		start  time.Time
		action string
	}{
		{"spot_interruption.json", KindSpotInterrupted, []string{"i-0abc"}, jan1, "terminate"},
		{"rebalance_recommendation.json", KindRebalanceRecommendation, []string{"i-0abc"}, jan1, ""},
		{"health_scheduled_change.json", KindScheduledChange, []string{"i-0abc", "i-0def"},
			time.Date(2026, 6, 5, 15, 10, 9, 0, time.UTC), "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"},
		{"state_change_stopping.json", KindInstanceStopped, []string{"i-0abc"}, jan1, "stopping"},
		{"state_change_stopped.json", KindInstanceStopped, []string{"i-0abc"}, jan1, "stopped"},
		{"state_change_shutting-down.json", KindInstanceTerminated, []string{"i-0abc"}, jan1, "shutting-down"},
		{"state_change_terminated.json", KindInstanceTerminated, []string{"i-0abc"}, jan1, "terminated"},
		{"state_change_running.json", KindNoOp, nil, jan1, "running"},
		{"state_change_pending.json", KindNoOp, nil, jan1, "pending"},
		{"capacity_reservation_interruption.json", KindCapacityReservationInterrupted, []string{"i-0abc"}, jan1, "terminate"},
		{"capacity_reservation_interruption_html_spelling.json", KindCapacityReservationInterrupted, []string{"i-0abc"}, jan1, "terminate"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			msg, err := Parse(readBody(t, tc.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if msg.Kind != tc.kind || !slices.Equal(msg.InstanceIDs, tc.ids) || !msg.StartTime.Equal(tc.start) || msg.Action != tc.action {
				t.Errorf("got kind %q ids %v start %v action %q; want %q %v %v %q",
					msg.Kind, msg.InstanceIDs, msg.StartTime, msg.Action, tc.kind, tc.ids, tc.start, tc.action)
			}
			if msg.ID == "" || msg.Source == "" || msg.DetailType == "" {
				t.Errorf("envelope not kept: %+v", msg)
			}
		})
	}
}

func TestParseNoOps(t *testing.T) {
	for name, body := range map[string]string{
		"unknown detail-type": `{"version":"0","id":"x","detail-type":"EC2 AMI State Change","source":"aws.ec2","time":"2026-01-01T00:00:00Z","detail":{"ImageId":"ami-1"}}`,
		"unknown source":      `{"version":"0","id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.s3","detail":{"instance-id":"i-1"}}`,
		"version 1":           `{"version":"1","id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-1"}}`,
		"no version":          `{"id":"x","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-1"}}`,
		"health not EC2":      `{"version":"0","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"RDS","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"db-1"}]}}`,
		"health issue":        `{"version":"0","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"issue","affectedEntities":[{"entityValue":"i-1"}]}}`,
		"state running no id": `{"version":"0","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"state":"running"}}`,
		"empty object":        `{}`,
	} {
		t.Run(name, func(t *testing.T) {
			msg, err := Parse(body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if msg.Kind != KindNoOp || len(msg.InstanceIDs) != 0 {
				t.Errorf("got %q %v, want a no-op", msg.Kind, msg.InstanceIDs)
			}
		})
	}
}

func TestParseStateIsCaseInsensitive(t *testing.T) {
	msg, err := Parse(`{"version":"0","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"instance-id":"i-1","state":"Shutting-Down"}}`)
	if err != nil || msg.Kind != KindInstanceTerminated {
		t.Fatalf("got %q, %v; want instance_terminated", msg.Kind, err)
	}
}

func TestParseHealthStartTimeFallsBackToEventTime(t *testing.T) {
	msg, err := Parse(`{"version":"0","time":"2026-01-01T00:00:00Z","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","startTime":"soon","affectedEntities":[{"entityValue":"i-1"}]}}`)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if want := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC); !msg.StartTime.Equal(want) {
		t.Errorf("start %v, want %v", msg.StartTime, want)
	}
}

func TestParseErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		body       string
		noInstance bool
	}{
		"not JSON":          {body: `not json`},
		"truncated":         {body: `{"version":"0","source":"aws.ec2"`},
		"array":             {body: `[1,2]`},
		"empty":             {body: ``},
		"bad time":          {body: `{"version":"0","time":"yesterday","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{"instance-id":"i-1"}}`},
		"detail wrong type": {body: `{"version":"0","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":7}}`},
		"spot no id":        {body: `{"version":"0","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-action":"terminate"}}`, noInstance: true},
		"spot no detail":    {body: `{"version":"0","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2"}`, noInstance: true},
		"rebalance no id":   {body: `{"version":"0","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{}}`, noInstance: true},
		"stopped no id":     {body: `{"version":"0","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"state":"stopped"}}`, noInstance: true},
		"reservation no id": {body: `{"version":"0","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","detail":{"azId":"use1-az1"}}`, noInstance: true},
		"health no entity":  {body: `{"version":"0","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":""}]}}`, noInstance: true},
	} {
		t.Run(name, func(t *testing.T) {
			msg, err := Parse(tc.body)
			if err == nil {
				t.Fatalf("Parse returned %+v, want an error", msg)
			}
			if got := errors.Is(err, ErrNoInstance); got != tc.noInstance {
				t.Errorf("errors.Is(ErrNoInstance) = %v, want %v (%v)", got, tc.noInstance, err)
			}
		})
	}
}

func TestKindDisrupts(t *testing.T) {
	for kind, want := range map[Kind]bool{
		KindNoOp: false, KindRebalanceRecommendation: false, KindSpotInterrupted: true, KindScheduledChange: true,
		KindInstanceStopped: true, KindInstanceTerminated: true, KindCapacityReservationInterrupted: true,
	} {
		if got := kind.Disrupts(); got != want {
			t.Errorf("%s.Disrupts() = %v, want %v", kind, got, want)
		}
	}
}
