// Package view is the model and rendering of `dovetail view`, a terminal
// view of a cluster's nodes and in-flight NodeClaims grouped by NodePool,
// in the spirit of eks-node-viewer.
//
// Build turns a set of objects into rows and totals without a terminal;
// Render draws them with lipgloss; Model is the bubbletea program that
// re-renders whenever the informers of a Source see a change.
package view
