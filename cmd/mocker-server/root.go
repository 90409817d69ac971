package main

import (
	"fmt"
	"io"
	"os"
	"strings"

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
		Example: "  mocker-server serve Qwen/Qwen3-8B --port 8000       # one server (also: mocker-server Qwen/Qwen3-8B)\n" +
			"  mocker-server fleet --workers 4 --admin-port 9000   # four servers and an admin API\n" +
			"  mocker-server replay --requests 500 --workers 2     # a workload in virtual time, a report",
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

// commandTypo refuses a first argument that is no subcommand and no
// existing path but is close to a subcommand's name: `mocker-server serev`
// would otherwise serve a model called "serev", and `mocker-server flet
// --workers 8` fail on a flag serve does not have.
func commandTypo(root *cobra.Command, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		return nil
	}
	var names []string
	for _, c := range root.Commands() {
		if c.Name() == args[0] || c.HasAlias(args[0]) {
			return nil
		}
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if _, err := os.Stat(args[0]); err == nil {
		return nil // a local model directory
	}
	s := config.Suggest(args[0], names)
	if s == "" {
		return nil
	}
	return &config.Error{Problems: []string{fmt.Sprintf(
		"unknown command %q (did you mean %q?); to serve a model of that name, run: mocker-server serve %s", args[0], s, args[0])}}
}
