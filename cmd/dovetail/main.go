// Command dovetail is the Dovetail node autoscaler: the in-cluster controller,
// a local control plane for trying it out, and tools to migrate manifests.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dovetail-autoscaler/dovetail/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := cli.NewRootCommand(streams).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "error: %v\n", err)
		os.Exit(1)
	}
}
