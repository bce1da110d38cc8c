// Package controlplane starts a real, local Kubernetes control plane from the
// binaries that hack/build-controlplane.sh builds into bin/: etcd and
// kube-apiserver (the "apiserver" profile, for integration tests), plus
// kube-scheduler, kube-controller-manager and kwok (the "full" profile, for
// end-to-end tests, `dovetail up`, the demo and benchmarks).
//
// It exists so that tests, the demo and benchmarks all run against the same
// real components, never a fake client. Every component listens on a free
// loopback port, gets generated certificates and keys, logs to its own file,
// and is stopped (with its whole process group) when Stop is called or the
// parent process dies, so no orphan processes are left behind.
package controlplane
