package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/dovetail-autoscaler/dovetail/internal/conversion/manifest"
)

// stdinSource is how documents read from standard input are named in errors.
const stdinSource = "<stdin>"

// ConvertOptions are the flags and streams of `dovetail convert`.
type ConvertOptions struct {
	// Filenames are files, directories, or "-" for standard input.
	Filenames []string
	// Recursive descends into the subdirectories of directories in Filenames.
	Recursive bool
	// To is the target version: v1 (default) or v1beta1.
	To string
	// IgnoreDefaults leaves out the v1alpha5 Provisioner default requirements.
	IgnoreDefaults bool
	// ContinueOnError converts every document it can instead of stopping at
	// the first that fails; the command still exits non-zero.
	ContinueOnError bool

	genericiooptions.IOStreams

	inputs []manifest.Input
}

// NewConvertOptions returns the options of `dovetail convert` with their defaults.
func NewConvertOptions(streams genericiooptions.IOStreams) *ConvertOptions {
	return &ConvertOptions{To: manifest.TargetV1, IOStreams: streams}
}

// NewConvertCommand returns `dovetail convert`, which converts Karpenter
// manifests (v1alpha5 Provisioner and Machine, v1alpha1 AWSNodeTemplate,
// v1beta1 or v1 NodePool, NodeClaim and EC2NodeClass) to the v1 API, or to
// v1beta1 with --to v1beta1, and writes them to standard output.
func NewConvertCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := NewConvertOptions(streams)
	cmd := &cobra.Command{
		Use:   "convert -f FILENAME [-f FILENAME ...] [--to v1|v1beta1]",
		Short: "Convert Karpenter manifests to the v1 API",
		Long: `Convert Karpenter manifests to the v1 API (or to v1beta1 with --to v1beta1).

Reads YAML from files, directories (-R descends into subdirectories) and
standard input (-f -), any number of documents each, and converts
v1alpha5 Provisioners and Machines, v1alpha1 AWSNodeTemplates, and v1beta1 or
v1 NodePools, NodeClaims and EC2NodeClasses. Documents of other kinds are
written unchanged. The converted stream goes to standard output; warnings
about what to check or finish by hand go to standard error.

A document that cannot be converted is reported with its file, document
number, line and field, and nothing is written; with --continue-on-error the
other documents are converted and the command still exits non-zero.
See docs/migration.md for every field and rule.`,
		Example: `  # Convert v1alpha5 manifests to v1
  dovetail convert -f provisioner.yaml -f nodetemplate.yaml > v1.yaml

  # Convert a directory tree to v1beta1, as karpenter-convert did
  dovetail convert -R -f manifests/ --to v1beta1

  # Fill in the node role the converter leaves as a placeholder
  dovetail convert -f nodetemplate.yaml | KARPENTER_NODE_ROLE=KarpenterNodeRole-demo envsubst`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: false,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	flags := cmd.Flags()
	flags.StringArrayVarP(&o.Filenames, "filename", "f", nil, `file or directory to convert, "-" for standard input; repeat -f for more (commas are part of the name)`)
	flags.BoolVarP(&o.Recursive, "recursive", "R", false, "process directories given with -f recursively")
	flags.StringVar(&o.To, "to", o.To, "target API version: v1 or v1beta1")
	flags.BoolVar(&o.IgnoreDefaults, "ignore-defaults", false, "do not add the v1alpha5 default requirements (linux, amd64, on-demand, c/m/r instance categories) to converted Provisioners")
	flags.BoolVar(&o.ContinueOnError, "continue-on-error", false, "convert every document that can be converted, leaving out the ones that cannot")
	_ = cmd.RegisterFlagCompletionFunc("to", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{manifest.TargetV1, manifest.TargetV1beta1}, cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}

// Complete reads the inputs named by Filenames, in order: a file as is, a
// directory's .yaml, .yml and .json files in lexical order (with Recursive,
// its subdirectories' too), "-" standard input (read once).
func (o *ConvertOptions) Complete() error {
	o.inputs = nil
	readStdin := false
	for _, name := range o.Filenames {
		if name == "-" {
			if readStdin {
				continue
			}
			readStdin = true
			data, err := io.ReadAll(o.In)
			if err != nil {
				return fmt.Errorf("reading standard input: %w", err)
			}
			o.inputs = append(o.inputs, manifest.Input{Source: stdinSource, Data: data})
			continue
		}
		if err := o.readPath(name); err != nil {
			return err
		}
	}
	return nil
}

// readPath adds a file, or the manifest files of a directory.
func (o *ConvertOptions) readPath(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
	}
	if !info.IsDir() {
		return o.readFile(path)
	}
	return filepath.WalkDir(path, func(p string, entry fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return fmt.Errorf("reading %s: %w", p, err)
		case entry.IsDir() && p != path && !o.Recursive:
			return filepath.SkipDir
		case entry.IsDir() || !isManifestFile(p):
			return nil
		}
		return o.readFile(p)
	})
}

// isManifestFile reports whether a file in a directory is read, by its
// extension, as kubectl -f does: .yaml, .yml or .json.
func isManifestFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

func (o *ConvertOptions) readFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
	}
	o.inputs = append(o.inputs, manifest.Input{Source: path, Data: data})
	return nil
}

// Validate checks the flags.
func (o *ConvertOptions) Validate() error {
	if len(o.Filenames) == 0 {
		return errors.New("no input: give files or directories with -f (-f - reads standard input)")
	}
	if o.To != manifest.TargetV1 && o.To != manifest.TargetV1beta1 {
		return fmt.Errorf("--to must be %s or %s, not %q", manifest.TargetV1, manifest.TargetV1beta1, o.To)
	}
	return nil
}

// Run converts the inputs, writes the converted stream to Out and the
// warnings to ErrOut, and returns the documents' errors, one per line.
func (o *ConvertOptions) Run() error {
	result, err := manifest.ConvertAll(o.inputs, manifest.Options{To: o.To, IgnoreDefaults: o.IgnoreDefaults, ContinueOnError: o.ContinueOnError})
	for _, w := range result.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", w)
	}
	if _, werr := o.Out.Write(result.Output); werr != nil {
		return fmt.Errorf("writing the converted manifests: %w", werr)
	}
	if err != nil && !o.ContinueOnError {
		return fmt.Errorf("%w\nnothing was written; --continue-on-error converts the other documents", err)
	}
	return err
}
