package sqs

import (
	"encoding/json"
	"time"
)

// Envelope is what every EventBridge event carries besides its detail.
type Envelope struct {
	// ID is the event ID (any unique string).
	ID string
	// Account is the AWS account the event is about.
	Account string
	// Region is the region the event happened in.
	Region string
	// Time is when the event happened; it is written as RFC 3339 in UTC.
	Time time.Time
}

// event is the EventBridge event layout, in AWS's field order.
type event struct {
	Version    string   `json:"version"`
	ID         string   `json:"id"`
	DetailType string   `json:"detail-type"`
	Source     string   `json:"source"`
	Account    string   `json:"account"`
	Time       string   `json:"time"`
	Region     string   `json:"region"`
	Resources  []string `json:"resources"`
	Detail     any      `json:"detail"`
}

func (e Envelope) body(source, detailType string, resources []string, detail any) string {
	b, err := json.Marshal(event{Version: "0", ID: e.ID, DetailType: detailType, Source: source, Account: e.Account,
		Time: e.Time.UTC().Format(time.RFC3339), Region: e.Region, Resources: resources, Detail: detail})
	if err != nil {
		panic(err) // only strings and string maps: cannot fail
	}
	return string(b)
}

// instanceARN is the ARN EC2 events list in resources.
func (e Envelope) instanceARN(instanceID string) string {
	return "arn:aws:ec2:" + e.Region + ":" + e.Account + ":instance/" + instanceID
}

// SpotInterruptionWarning is the body of an "EC2 Spot Instance Interruption
// Warning" event (source aws.ec2), sent two minutes before EC2 reclaims a
// spot instance; action is terminate, stop or hibernate.
//
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html
func SpotInterruptionWarning(e Envelope, instanceID, action string) string {
	return e.body("aws.ec2", "EC2 Spot Instance Interruption Warning", []string{e.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "instance-action": action})
}

// RebalanceRecommendation is the body of an "EC2 Instance Rebalance
// Recommendation" event (source aws.ec2).
//
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/rebalance-recommendations.html
func RebalanceRecommendation(e Envelope, instanceID string) string {
	return e.body("aws.ec2", "EC2 Instance Rebalance Recommendation", []string{e.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID})
}

// InstanceStateChange is the body of an "EC2 Instance State-change
// Notification" event (source aws.ec2); state is pending, running, stopping,
// stopped, shutting-down or terminated.
//
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitoring-instance-state-changes.html
func InstanceStateChange(e Envelope, instanceID, state string) string {
	return e.body("aws.ec2", "EC2 Instance State-change Notification", []string{e.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "state": state})
}

// CapacityReservationInterruptionWarning is the body of an "EC2 Capacity
// Reservation Instance Interruption Warning" event (source aws.ec2), sent two
// minutes before an instance in an interruptible capacity reservation is
// reclaimed; azID is the zone ID (e.g. use1-az1).
//
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/interruptible-capacity-reservations.html
func CapacityReservationInterruptionWarning(e Envelope, instanceID, azID string, termination time.Time) string {
	return e.body("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", []string{e.instanceARN(instanceID)},
		map[string]string{"instance-id": instanceID, "instance-action": "terminate",
			"instance-termination-time": termination.UTC().Format(time.RFC3339), "azId": azID})
}

// ScheduledChange describes an AWS Health scheduled-change event for EC2.
type ScheduledChange struct {
	// EventTypeCode is e.g. AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED.
	EventTypeCode string
	// Start and End bound the scheduled change.
	Start, End time.Time
	// Description is the event's latestDescription.
	Description string
	// InstanceIDs are the affected instances.
	InstanceIDs []string
}

// healthTime is AWS Health's date layout, e.g. "Sat, 05 Jun 2026 15:10:09 GMT".
const healthTime = "Mon, 02 Jan 2006 15:04:05 GMT"

// HealthScheduledChange is the body of an "AWS Health Event" (source
// aws.health) for service EC2 with eventTypeCategory scheduledChange; the
// affected instances are in resources and detail.affectedEntities.
//
// https://docs.aws.amazon.com/health/latest/ug/aws-health-events-eventbridge-schema.html
func HealthScheduledChange(e Envelope, c ScheduledChange) string {
	type description struct {
		Language          string `json:"language"`
		LatestDescription string `json:"latestDescription"`
	}
	type entity struct {
		EntityValue string `json:"entityValue"`
		Status      string `json:"status,omitempty"`
	}
	type detail struct {
		EventArn          string        `json:"eventArn"`
		Service           string        `json:"service"`
		EventScopeCode    string        `json:"eventScopeCode"`
		CommunicationID   string        `json:"communicationId"`
		LastUpdatedTime   string        `json:"lastUpdatedTime"`
		StatusCode        string        `json:"statusCode"`
		EventRegion       string        `json:"eventRegion"`
		EventTypeCode     string        `json:"eventTypeCode"`
		EventTypeCategory string        `json:"eventTypeCategory"`
		StartTime         string        `json:"startTime"`
		EndTime           string        `json:"endTime"`
		EventDescription  []description `json:"eventDescription"`
		AffectedEntities  []entity      `json:"affectedEntities"`
		AffectedAccount   string        `json:"affectedAccount"`
	}
	d := detail{
		EventArn:          "arn:aws:health:" + e.Region + "::event/EC2/" + c.EventTypeCode + "/" + c.EventTypeCode + "_" + e.ID,
		Service:           "EC2",
		EventScopeCode:    "ACCOUNT_SPECIFIC",
		CommunicationID:   e.ID,
		LastUpdatedTime:   e.Time.UTC().Format(healthTime),
		StatusCode:        "upcoming",
		EventRegion:       e.Region,
		EventTypeCode:     c.EventTypeCode,
		EventTypeCategory: "scheduledChange",
		StartTime:         c.Start.UTC().Format(healthTime),
		EndTime:           c.End.UTC().Format(healthTime),
		EventDescription:  []description{{Language: "en_US", LatestDescription: c.Description}},
		AffectedEntities:  []entity{},
		AffectedAccount:   e.Account,
	}
	resources := []string{}
	for _, id := range c.InstanceIDs {
		d.AffectedEntities = append(d.AffectedEntities, entity{EntityValue: id})
		resources = append(resources, id)
	}
	return e.body("aws.health", "AWS Health Event", resources, d)
}
