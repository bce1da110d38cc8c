package sqs

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEventBodies(t *testing.T) {
	env := Envelope{ID: "e-1", Account: "123456789012", Region: "us-east-2", Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	arn := "arn:aws:ec2:us-east-2:123456789012:instance/i-0abc"
	envelope := func(source, detailType string, resources []any, detail map[string]any) map[string]any {
		return map[string]any{"version": "0", "id": "e-1", "detail-type": detailType, "source": source, "account": "123456789012",
			"time": "2026-01-01T00:00:00Z", "region": "us-east-2", "resources": resources, "detail": detail}
	}
	cases := map[string]struct {
		body string
		want map[string]any
	}{
		"spot": {body: SpotInterruptionWarning(env, "i-0abc", "terminate"), want: envelope("aws.ec2", "EC2 Spot Instance Interruption Warning", []any{arn},
			map[string]any{"instance-id": "i-0abc", "instance-action": "terminate"})},
		"rebalance": {body: RebalanceRecommendation(env, "i-0abc"), want: envelope("aws.ec2", "EC2 Instance Rebalance Recommendation", []any{arn},
			map[string]any{"instance-id": "i-0abc"})},
		"state change": {body: InstanceStateChange(env, "i-0abc", "shutting-down"), want: envelope("aws.ec2", "EC2 Instance State-change Notification", []any{arn},
			map[string]any{"instance-id": "i-0abc", "state": "shutting-down"})},
		"capacity reservation": {body: CapacityReservationInterruptionWarning(env, "i-0abc", "use2-az1", env.Time.Add(2*time.Minute)),
			want: envelope("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", []any{arn},
				map[string]any{"instance-id": "i-0abc", "instance-action": "terminate", "instance-termination-time": "2026-01-01T00:02:00Z", "azId": "use2-az1"})},
		"health": {body: HealthScheduledChange(env, ScheduledChange{EventTypeCode: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			Start: time.Date(2026, 6, 5, 15, 10, 9, 0, time.UTC), End: time.Date(2026, 6, 5, 16, 10, 9, 0, time.UTC), Description: "retiring",
			InstanceIDs: []string{"i-0abc", "i-0def"}}),
			want: envelope("aws.health", "AWS Health Event", []any{"i-0abc", "i-0def"}, map[string]any{
				"eventArn": "arn:aws:health:us-east-2::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_e-1",
				"service":  "EC2", "eventScopeCode": "ACCOUNT_SPECIFIC", "communicationId": "e-1", "lastUpdatedTime": "Thu, 01 Jan 2026 00:00:00 GMT",
				"statusCode": "upcoming", "eventRegion": "us-east-2", "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
				"eventTypeCategory": "scheduledChange", "startTime": "Fri, 05 Jun 2026 15:10:09 GMT", "endTime": "Fri, 05 Jun 2026 16:10:09 GMT",
				"eventDescription": []any{map[string]any{"language": "en_US", "latestDescription": "retiring"}},
				"affectedEntities": []any{map[string]any{"entityValue": "i-0abc"}, map[string]any{"entityValue": "i-0def"}},
				"affectedAccount":  "123456789012",
			})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal([]byte(tc.body), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}
