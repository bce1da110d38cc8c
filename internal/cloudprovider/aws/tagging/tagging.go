// Package tagging names registered instances in EC2: once a NodeClaim's
// Node has registered, its instance gets the tags Name=<node name>,
// karpenter.sh/nodeclaim=<claim> and eks:eks-cluster-name=<cluster> (only
// the ones still missing), and the claim is annotated
// karpenter.k8s.aws/tagged=true so it is done once. This is what Karpenter's
// AWS provider does after registration, so the EC2 console and cost reports
// show instances by their node names.
package tagging

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/internal/awsclient"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/instance"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/aws/sdk"
)

// TaggedAnnotationKey marks a NodeClaim whose instance has been tagged.
const TaggedAnnotationKey = awsv1.Group + "/tagged"

// Controller tags the instances of registered NodeClaims.
type Controller struct {
	kubeClient  client.Client
	ec2         sdk.EC2
	clusterName string
}

// NewController returns the tagging controller.
func NewController(kubeClient client.Client, ec2API sdk.EC2, clusterName string) *Controller {
	return &Controller{kubeClient: kubeClient, ec2: ec2API, clusterName: clusterName}
}

// Name identifies the controller.
func (c *Controller) Name() string { return "aws.nodeclaim.tagging" }

// Register watches NodeClaims.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1.NodeClaim{}).
		Complete(reconcile.AsReconciler(mgr.GetClient(), c))
}

// Reconcile tags the claim's instance once its Node has registered.
func (c *Controller) Reconcile(ctx context.Context, nc *karpv1.NodeClaim) (reconcile.Result, error) {
	// 1. Only registered, live claims of this provider not tagged yet.
	if nc.DeletionTimestamp != nil || nc.Annotations[TaggedAnnotationKey] == "true" || nc.Status.NodeName == "" ||
		!meta.IsStatusConditionTrue(nc.Status.Conditions, karpv1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	id, err := instance.ParseProviderID(nc.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, nil
	}
	// 2. Tag the instance with what it lacks.
	want := map[string]string{
		instance.TagName:       nc.Status.NodeName,
		instance.TagNodeClaim:  nc.Name,
		instance.TagEKSCluster: c.clusterName,
	}
	var tags []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(want)) {
		tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(want[k])})
	}
	if _, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
		if code := awsclient.ErrorCode(err); code == "InvalidInstanceID.NotFound" {
			// Not described yet (eventual consistency) or gone: try later.
			return reconcile.Result{RequeueAfter: 10 * time.Second}, nil
		}
		return reconcile.Result{}, fmt.Errorf("tagging instance %s of nodeclaim %s: %w", id, nc.Name, err)
	}
	// 3. Remember it on the claim.
	stored := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[TaggedAnnotationKey] = "true"
	if err := c.kubeClient.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("annotating nodeclaim %s as tagged: %w", nc.Name, err))
	}
	log.FromContext(ctx).V(1).Info("Tagged instance", "NodeClaim", klog.KObj(nc), "instanceID", id, "Node", nc.Status.NodeName)
	return reconcile.Result{}, nil
}
