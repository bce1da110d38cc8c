package env

import (
	"sigs.k8s.io/controller-runtime/pkg/config"

	"github.com/dovetail-autoscaler/dovetail/internal/operator"
)

// ctrlConfig is the operator's controller configuration; skipNameValidation
// lets tests start several managers with the same controller names in one
// process (controller-runtime rejects duplicate names otherwise).
func ctrlConfig(skipNameValidation bool) config.Controller {
	return operator.ControllerConfig(skipNameValidation)
}
