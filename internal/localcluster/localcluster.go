// Package localcluster runs Dovetail on the local control plane: the full
// profile (etcd, kube-apiserver, kube-scheduler, kube-controller-manager and
// kwok), Dovetail's CRDs, a default KWOKNodeClass and NodePool, and the
// controller in-process with the kwok provider. `dovetail up`, `dovetail
// demo`, the end-to-end tests and the end-to-end benchmark share it.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-autoscaler/dovetail/api/crds"
	"github.com/dovetail-autoscaler/dovetail/internal/cloudprovider/kwok"
	"github.com/dovetail-autoscaler/dovetail/internal/compose"
	"github.com/dovetail-autoscaler/dovetail/internal/controlplane"
	"github.com/dovetail-autoscaler/dovetail/internal/crdinstall"
	"github.com/dovetail-autoscaler/dovetail/internal/localaws"
	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// Cluster is a running local control plane with Dovetail's CRDs.
type Cluster struct {
	ControlPlane *controlplane.ControlPlane
	// Client talks to the API server directly (no cache).
	Client client.Client
	// AWS is the local AWS endpoint of a cluster started with StartAWS; nil
	// for the kwok provider's clusters.
	AWS *localaws.Server
}

// Start starts the full control plane, installs the CRDs and, when
// defaults is true, creates the default KWOKNodeClass and NodePool. The
// controller is not started; see StartController.
func Start(ctx context.Context, opts controlplane.Options, defaults bool) (*Cluster, error) {
	opts.Profile = controlplane.ProfileFull
	cp, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("starting the local control plane: %w", err)
	}
	c, err := setup(ctx, cp, defaults)
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return c, nil
}

func setup(ctx context.Context, cp *controlplane.ControlPlane, defaults bool) (*Cluster, error) {
	all, err := crds.All()
	if err != nil {
		return nil, err
	}
	if err := crdinstall.Install(ctx, cp.RESTConfig, all, time.Minute); err != nil {
		return nil, fmt.Errorf("installing CRDs: %w", err)
	}
	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	kubeClient, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	c := &Cluster{ControlPlane: cp, Client: kubeClient}
	if defaults {
		for _, obj := range []client.Object{DefaultNodeClass(), DefaultNodePool()} {
			if err := kubeClient.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("creating default %T %s: %w", obj, obj.GetName(), err)
			}
		}
	}
	return c, nil
}

// Stop stops the local AWS endpoint, if any, and the control plane.
func (c *Cluster) Stop() error {
	var errs []error
	if c.AWS != nil {
		errs = append(errs, c.AWS.Stop())
	}
	errs = append(errs, c.ControlPlane.Stop())
	return errors.Join(errs...)
}

// OperatorOptions returns the operator's defaults for a local, single-replica
// controller: no leader election, no metrics or probe ports, console logs,
// and the conversion webhook served to the local API server on localhost.
func OperatorOptions() operator.Options {
	var o operator.Options
	o.AddFlags(pflag.NewFlagSet("defaults", pflag.ContinueOnError))
	o.LeaderElect = false
	o.MetricsPort = 0
	o.HealthProbePort = 0
	o.LogFormat = "console"
	o.AllowRestart = true
	o.WebhookLocalURL = true
	o.WebhookDefaultNodeClass = kwok.NodeClassGVK().GroupKind()
	return o
}

// Controller is a controller running in-process.
type Controller struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// StartController runs the Dovetail controller (kwok provider) against the
// cluster in the background until Stop.
func (c *Cluster) StartController(ctx context.Context, opOpts operator.Options, kwokOpts compose.KwokOptions) (*Controller, error) {
	return c.startController(ctx, opOpts, func(ctx context.Context, op *operator.Operator) error {
		return compose.RunWithKwok(ctx, op, kwokOpts)
	})
}

// startController builds the operator (serving the conversion webhook to
// the local API server unless disabled) and runs the composition in the
// background.
func (c *Cluster) startController(ctx context.Context, opOpts operator.Options, run func(context.Context, *operator.Operator) error) (*Controller, error) {
	ctx, cancel := context.WithCancel(ctx)
	if !opOpts.DisableWebhook {
		port, err := freePort()
		if err != nil {
			cancel()
			return nil, err
		}
		opOpts.WebhookPort = port
		opOpts.WebhookCertDir = filepath.Join(c.ControlPlane.WorkDir(), fmt.Sprintf("webhook-certs-%d", port))
	}
	op, err := operator.New(ctx, opOpts, c.ControlPlane.RESTConfig)
	if err != nil {
		cancel()
		return nil, err
	}
	if op.Webhook != nil {
		// Point the multi-version CRDs' conversion at this controller's webhook.
		all, err := crds.All()
		if err == nil {
			err = crdinstall.Install(ctx, c.ControlPlane.RESTConfig, crdinstall.WithWebhookConversion(all, op.Webhook.ClientConfig()), time.Minute)
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("installing CRDs with the conversion webhook: %w", err)
		}
	}
	ctrl := &Controller{cancel: cancel, done: make(chan struct{})}
	go func() {
		ctrl.err = run(ctx, op)
		close(ctrl.done)
	}()
	return ctrl, nil
}

// Done is closed when the controller has stopped.
func (c *Controller) Done() <-chan struct{} { return c.done }

// Err is why the controller stopped; read it after Done is closed.
func (c *Controller) Err() error { return c.err }

// Stop stops the controller and waits for it.
func (c *Controller) Stop() error {
	c.cancel()
	<-c.done
	return c.err
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for the webhook: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
