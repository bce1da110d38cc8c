//go:build tools

// Package tools pins kube-apiserver, kube-scheduler and kube-controller-manager,
// built into bin/ by hack/build-controlplane.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
