package cli

import (
	"bytes"
	"io"
	"os"
)

// IOStreams are the standard streams a command reads and writes. Commands never
// touch os.Stdin/os.Stdout/os.Stderr directly, so tests can capture them.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// StandardStreams returns the process's standard streams.
func StandardStreams() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// TestStreams returns streams backed by buffers, and the buffers.
func TestStreams() (IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}
