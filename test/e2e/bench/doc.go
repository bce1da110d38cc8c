// Package bench holds the end-to-end benchmarks of docs/workloads.md section 3:
// Dovetail running as a separate `dovetail controller` process against the
// full local control plane, measured from outside (wall time, per-pod pending
// time) and by the kernel (controller CPU seconds and peak RSS). They are
// benchmarks, not tests: run them with
//
//	go test ./test/e2e/bench -run '^$' -bench . -benchtime 1x -timeout 120m
package bench
