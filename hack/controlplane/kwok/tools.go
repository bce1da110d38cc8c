//go:build tools

// Package tools pins kwok, built into bin/ by hack/build-controlplane.sh.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
