package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Envelope sources and detail-types Dovetail acts on (AWS's EventBridge
// event names, as the getting-started CloudFormation rules match them).
const (
	sourceEC2    = "aws.ec2"
	sourceHealth = "aws.health"

	detailSpotInterruption = "EC2 Spot Instance Interruption Warning"
	detailRebalance        = "EC2 Instance Rebalance Recommendation"
	detailStateChange      = "EC2 Instance State-change Notification"
	detailHealth           = "AWS Health Event"
	// detailCapacityReservation is the spelling Karpenter's rule and AWS's
	// markdown documentation use; detailCapacityReservationAlt is the one
	// AWS's HTML page shows. Both are accepted.
	detailCapacityReservation    = "EC2 Capacity Reservation Instance Interruption Warning"
	detailCapacityReservationAlt = "EC2 Interruptible Capacity Reservation Instance Interruption Warning"
)

// healthTimeLayout is AWS Health's date format, e.g. "Sat, 05 Jun 2026 15:10:09 GMT".
const healthTimeLayout = time.RFC1123

// ErrNoInstance is returned for a message of a handled kind that names no instance.
var ErrNoInstance = errors.New("message names no instance")

// envelope is the EventBridge event; detail is decoded by kind.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Detail     json.RawMessage `json:"detail"`
}

// ec2Detail is the detail of the aws.ec2 events.
type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

// healthDetail is the part of an AWS Health event's detail Dovetail reads.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	EventTypeCode     string `json:"eventTypeCode"`
	StartTime         string `json:"startTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse decodes an SQS message body, an EventBridge event, and classifies it
// by (version "0", source, detail-type). Unknown events and uninteresting
// states are KindNoOp without error; malformed JSON, an unreadable time, or
// a handled event without an instance ID is an error.
func Parse(body string) (Message, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Message{}, fmt.Errorf("decoding the event envelope: %w", err)
	}
	msg := Message{Kind: KindNoOp, ID: env.ID, Source: env.Source, DetailType: env.DetailType}
	if env.Time != "" {
		t, err := time.Parse(time.RFC3339, env.Time)
		if err != nil {
			return Message{}, fmt.Errorf("event %s: reading time %q: %w", env.ID, env.Time, err)
		}
		msg.Time = t
	}
	msg.StartTime = msg.Time
	if env.Version != "0" {
		return msg, nil
	}
	var err error
	switch {
	case env.Source == sourceEC2 && env.DetailType == detailSpotInterruption:
		err = parseEC2(&msg, env.Detail, KindSpotInterrupted)
	case env.Source == sourceEC2 && env.DetailType == detailRebalance:
		err = parseEC2(&msg, env.Detail, KindRebalanceRecommendation)
	case env.Source == sourceEC2 && (env.DetailType == detailCapacityReservation || env.DetailType == detailCapacityReservationAlt):
		err = parseEC2(&msg, env.Detail, KindCapacityReservationInterrupted)
	case env.Source == sourceEC2 && env.DetailType == detailStateChange:
		err = parseStateChange(&msg, env.Detail)
	case env.Source == sourceHealth && env.DetailType == detailHealth:
		err = parseHealth(&msg, env.Detail)
	}
	if err != nil {
		return Message{}, fmt.Errorf("event %s (%s / %s): %w", env.ID, env.Source, env.DetailType, err)
	}
	return msg, nil
}

// decodeDetail decodes a required detail object.
func decodeDetail(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("no detail: %w", ErrNoInstance)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("decoding detail: %w", err)
	}
	return nil
}

// parseEC2 reads the detail of a spot, rebalance or capacity reservation event.
func parseEC2(msg *Message, raw json.RawMessage, kind Kind) error {
	var d ec2Detail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	if d.InstanceID == "" {
		return fmt.Errorf("detail.instance-id is empty: %w", ErrNoInstance)
	}
	msg.Kind, msg.InstanceIDs, msg.Action = kind, []string{d.InstanceID}, d.InstanceAction
	return nil
}

// parseStateChange keeps stopping/stopped and shutting-down/terminated,
// compared case-insensitively; other states are no-ops.
func parseStateChange(msg *Message, raw json.RawMessage) error {
	var d ec2Detail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	var kind Kind
	switch strings.ToLower(d.State) {
	case "stopping", "stopped":
		kind = KindInstanceStopped
	case "shutting-down", "terminated":
		kind = KindInstanceTerminated
	default:
		msg.Action = d.State
		return nil
	}
	if d.InstanceID == "" {
		return fmt.Errorf("detail.instance-id is empty: %w", ErrNoInstance)
	}
	msg.Kind, msg.InstanceIDs, msg.Action = kind, []string{d.InstanceID}, d.State
	return nil
}

// parseHealth keeps EC2 scheduled changes; the instances are the affected
// entities' values.
func parseHealth(msg *Message, raw json.RawMessage) error {
	var d healthDetail
	if err := decodeDetail(raw, &d); err != nil {
		return err
	}
	if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
		return nil
	}
	var ids []string
	for _, e := range d.AffectedEntities {
		if e.EntityValue != "" {
			ids = append(ids, e.EntityValue)
		}
	}
	if len(ids) == 0 {
		return fmt.Errorf("detail.affectedEntities names no entity: %w", ErrNoInstance)
	}
	msg.Kind, msg.InstanceIDs, msg.Action = KindScheduledChange, ids, d.EventTypeCode
	if t, err := time.Parse(healthTimeLayout, d.StartTime); err == nil {
		msg.StartTime = t
	}
	return nil
}
