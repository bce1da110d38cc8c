package nodepool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/hash"
	"github.com/dovetail-autoscaler/dovetail/internal/controllers/nodepool/readiness"
	"github.com/dovetail-autoscaler/dovetail/internal/localcluster"
	"github.com/dovetail-autoscaler/dovetail/internal/nodepoolutil"
	"github.com/dovetail-autoscaler/dovetail/internal/testing/env"
)

// startControllers runs the readiness, hash and KWOKNodeClass status controllers.
func startControllers(t *testing.T) {
	t.Helper()
	testEnv.StartManager(t, func(mgr manager.Manager) error {
		provider, err := kwok.New(mgr.GetClient(), clock.RealClock{}, kwok.Options{})
		if err != nil {
			return err
		}
		for _, c := range []interface {
			Register(context.Context, manager.Manager) error
		}{
			readiness.NewController(clock.RealClock{}, mgr.GetClient(), provider),
			hash.NewController(mgr.GetClient()),
			kwok.NewNodeClassController(mgr.GetClient(), clock.RealClock{}),
		} {
			if err := c.Register(context.Background(), mgr); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestReadiness(t *testing.T) {
	startControllers(t)
	ctx := context.Background()
	nodeClass := &kwokv1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "ready-class"}}
	if err := testEnv.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		mutate         func(*v1.NodePool)
		wantNodeClass  metav1.ConditionStatus
		wantReady      metav1.ConditionStatus
		wantReason     string
		wantMessageHas string
	}{
		"ready node class": {
			mutate:        func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "ready-class" },
			wantNodeClass: metav1.ConditionTrue, wantReady: metav1.ConditionTrue, wantReason: "Ready",
		},
		"missing node class": {
			mutate:        func(np *v1.NodePool) { np.Spec.Template.Spec.NodeClassRef.Name = "missing" },
			wantNodeClass: metav1.ConditionFalse, wantReady: metav1.ConditionFalse, wantReason: "NodeClassNotFound",
			wantMessageHas: `KWOKNodeClass "missing" not found`,
		},
		"node class of another provider": {
			mutate: func(np *v1.NodePool) {
				np.Spec.Template.Spec.NodeClassRef = &v1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"}
			},
			wantNodeClass: metav1.ConditionFalse, wantReady: metav1.ConditionFalse, wantReason: "UnsupportedNodeClass",
			wantMessageHas: "not supported by the kwok cloud provider",
		},
		// An invalid template label value is now rejected at admission
		// (test/integration/api TestInvalidNodePools); the readiness check
		// of label values stays for NodePools stored under an older CRD.
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			np := localcluster.DefaultNodePool()
			np.Name = strings.ReplaceAll(name, " ", "-")
			np.Spec.Template.Spec.NodeClassRef.Name = "ready-class"
			tc.mutate(np)
			if err := testEnv.Client.Create(ctx, np); err != nil {
				t.Fatalf("creating nodepool: %v", err)
			}
			t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, np) })
			env.Eventually(t, 30*time.Second, "the NodePool's conditions", func(ctx context.Context) (bool, error) {
				got := &v1.NodePool{}
				if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
					return false, err
				}
				nodeClassReady := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionTypeNodeClassReady)
				ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionTypeReady)
				if nodeClassReady == nil || ready == nil {
					return false, nil
				}
				return nodeClassReady.Status == tc.wantNodeClass && ready.Status == tc.wantReady &&
					ready.Reason == tc.wantReason && strings.Contains(ready.Message, tc.wantMessageHas), nil
			})
		})
	}
}

func TestHashAnnotation(t *testing.T) {
	startControllers(t)
	ctx := context.Background()
	np := localcluster.DefaultNodePool()
	np.Name = "hashed"
	if err := testEnv.Client.Create(ctx, np); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = testEnv.Client.Delete(ctx, np) })
	hashOf := func(ctx context.Context) (string, string, error) {
		got := &v1.NodePool{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			return "", "", err
		}
		return got.Annotations[v1.NodePoolHashAnnotationKey], nodepoolutil.TemplateHash(got), nil
	}
	var first string
	env.Eventually(t, 30*time.Second, "the hash annotation", func(ctx context.Context) (bool, error) {
		got, want, err := hashOf(ctx)
		first = got
		return got != "" && got == want, err
	})
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &v1.NodePool{}
		if err := testEnv.Client.Get(ctx, client.ObjectKeyFromObject(np), got); err != nil {
			return err
		}
		got.Spec.Template.ObjectMeta.Labels = map[string]string{"team": "checkout"}
		return testEnv.Client.Update(ctx, got)
	})
	if err != nil {
		t.Fatal(err)
	}
	env.Eventually(t, 30*time.Second, "the hash annotation to follow the template", func(ctx context.Context) (bool, error) {
		got, want, err := hashOf(ctx)
		return got != first && got == want, err
	})
}
