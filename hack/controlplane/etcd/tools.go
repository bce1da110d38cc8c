//go:build tools

// Package tools pins etcd, built into bin/ by hack/build-controlplane.sh.
package tools

import _ "go.etcd.io/etcd/server/v3"
