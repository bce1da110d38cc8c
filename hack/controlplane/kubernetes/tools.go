//go:build tools

// Package tools pins kube-apiserver, kube-scheduler, kube-controller-manager and kubectl,
// built into bin/ by hack/build-controlplane.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
