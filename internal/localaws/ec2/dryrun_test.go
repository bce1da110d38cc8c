package ec2

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestDryRunIsAnsweredBeforeParameters checks, through the SDK, that
// DryRun answers DryRunOperation before the action's parameters are
// checked (an out-of-range MaxResults, unknown ids) and changes nothing.
func TestDryRunIsAnsweredBeforeParameters(t *testing.T) {
	e := newEnv(t, 1)
	ctx := context.Background()
	_, err := e.client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(1)})
	if got := code(t, err); got != "InvalidParameterValue" {
		t.Fatalf("DescribeSubnets MaxResults=1: code %q, want InvalidParameterValue", got)
	}
	_, err = e.client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(1), DryRun: aws.Bool(true)})
	if got := code(t, err); got != "DryRunOperation" {
		t.Errorf("dry-run DescribeSubnets MaxResults=1: code %q, want DryRunOperation", got)
	}
	_, err = e.client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0000000000000dead"}, DryRun: aws.Bool(true)})
	if got := code(t, err); got != "DryRunOperation" {
		t.Errorf("dry-run TerminateInstances of an unknown instance: code %q, want DryRunOperation", got)
	}
	_, err = e.client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{e.subnets[0].ID}, DryRun: aws.Bool(true),
		Tags: []ec2types.Tag{{Key: aws.String("dry"), Value: aws.String("run")}}})
	if got := code(t, err); got != "DryRunOperation" {
		t.Errorf("dry-run CreateTags: code %q, want DryRunOperation", got)
	}
	for _, sn := range e.svc.Subnets() {
		if _, ok := sn.Tags["dry"]; ok {
			t.Errorf("a dry-run CreateTags tagged subnet %s", sn.ID)
		}
	}
}
