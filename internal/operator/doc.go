// Package operator builds the process every Dovetail controller runs in:
// options from flags and environment, structured logging, the
// controller-runtime manager with leader election, health probes, and the
// Prometheus endpoint. It composes; the work lives in the controllers.
package operator
