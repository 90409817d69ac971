package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mocker-server/mocker-server/internal/config"
)

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [MODEL]",
		Short: "Run the mock inference server (default command)",
		Long: "Run the mock inference server (default command).\n\n" +
			"Every `vllm serve` flag is accepted too: the ones the mock implements are listed\n" +
			"below; the others (--tensor-parallel-size, --dtype, ...) have their values checked,\n" +
			"have no effect and are named once at startup (docs/vllm-flags.md).",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &config.Error{Problems: []string{fmt.Sprintf("serve accepts at most one positional argument (MODEL), got %d: %q", len(args), args)}}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadServeConfig(cmd, args, stderr)
			if err != nil {
				return err
			}
			return serveFunc(cmd.Context(), cfg, stdout, stderr)
		},
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

// loadServeConfig loads and validates the configuration of serve: sources
// from the flags, the positional MODEL, warnings printed to stderr.
func loadServeConfig(cmd *cobra.Command, args []string, stderr io.Writer) (*config.Config, error) {
	opts := config.OptionsFromFlags(cmd.Flags())
	if len(args) == 1 {
		if m, ok := opts.Overlay["model"].(string); ok && m != args[0] {
			return nil, &config.Error{Problems: []string{
				fmt.Sprintf("model given twice: positional %q and --model %q", args[0], m),
			}}
		}
		opts.Overlay["model"] = args[0]
	}
	cfg, warnings, err := config.Load(opts)
	if err != nil {
		// Warnings are about a server that would start; this one will not.
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if ignored := config.NoEffectFlags(cmd.Flags()); len(ignored) > 0 {
		fmt.Fprintf(stderr, "accepted, no effect: %s\n", strings.Join(ignored, ", "))
	}
	return cfg, nil
}

// serveFunc runs serve with the validated configuration until ctx is done:
// the engines and the HTTP server (runServer, server.go). The command-line
// tests swap in printConfig to inspect the validated configuration.
var serveFunc = runServer

// printConfig prints the configuration (API and admin keys redacted) as
// indented JSON.
func printConfig(_ context.Context, cfg *config.Config, stdout, _ io.Writer) error {
	shown := *cfg
	shown.APIKey = make([]string, len(cfg.APIKey))
	for i := range shown.APIKey {
		shown.APIKey[i] = "<redacted>"
	}
	if shown.AdminKey != "" {
		shown.AdminKey = "<redacted>"
	}
	out, err := json.MarshalIndent(shown, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}
