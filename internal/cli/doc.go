// Package cli holds the `dovetail` command and its subcommands. Each
// subcommand is an Options value with Complete, Validate and Run, writing only
// to injected IOStreams, so that bad-input paths are tested as plain function
// calls; the work itself lives in library packages.
package cli
