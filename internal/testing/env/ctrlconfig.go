package env

import "sigs.k8s.io/controller-runtime/pkg/config"

// ctrlConfig lets tests start several managers with the same controller
// names in one process (controller-runtime rejects duplicate names otherwise).
func ctrlConfig(skipNameValidation bool) config.Controller {
	return config.Controller{SkipNameValidation: &skipNameValidation}
}
