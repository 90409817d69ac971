package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/mocker-server/mocker-server/internal/config"
)

// newRootCmd builds the command tree: serve (the default), fleet, replay, calibrate and version.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "mocker-server",
		Short: "GPU-free mock LLM inference server (OpenAI-compatible API, simulated engine)",
		Long: "mocker-server speaks the OpenAI-compatible HTTP API the way `vllm serve` does and\n" +
			"simulates a vLLM-, SGLang- or TensorRT-LLM-style engine behind it.\n" +
			"Without a subcommand it runs `serve`.",
		Version:       version,
		SilenceErrors: true, // run reports errors
		SilenceUsage:  true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag parsing errors (unknown flag, bad value, missing value) are
	// configuration errors: exit status 2; an unknown flag gets a "did you
	// mean" suggestion.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &config.Error{Problems: []string{config.ExplainFlagError(cmd.Flags(), err)}}
	})
	root.AddCommand(newServeCmd(stdout, stderr), newFleetCmd(stderr), newReplayCmd(stdout, stderr),
		newCalibrateCmd(stdout, stderr), newVersionCmd(stdout))
	return root
}

// withDefaultCommand makes serve the default subcommand:
// `mocker-server --port 9000` runs as `mocker-server serve --port 9000`, and
// `mocker-server MODEL` as `mocker-server serve MODEL`. As with cobra, a
// subcommand name must be the first argument. A lone -h/--help or --version
// stays with the root command; so does -v.
func withDefaultCommand(root *cobra.Command, args []string) []string {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			return args
		case "-h", "--help", "-v", "--version":
			if len(args) == 1 {
				return args
			}
		}
		for _, c := range root.Commands() {
			if c.Name() == args[0] || c.HasAlias(args[0]) {
				return args
			}
		}
	}
	return append([]string{"serve"}, args...)
}
