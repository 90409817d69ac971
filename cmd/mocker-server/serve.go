package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mocker-server/mocker-server/internal/config"
)

func newServeCmd(stdout, stderr io.Writer) *cobra.Command {
	var admin adminFlags
	cmd := &cobra.Command{
		Use:   "serve [MODEL]",
		Short: "Run the mock inference server (default command)",
		Long: "Every `vllm serve` flag is accepted too: the ones the mock implements are listed\n" +
			"below; the others (--tensor-parallel-size, --dtype, ...) have their values checked,\n" +
			"have no effect and are named once at startup (docs/vllm-flags.md).",
		Example: "  mocker-server serve Qwen/Qwen3-8B --port 8000\n" +
			"  mocker-server serve --config configs/demo.yaml          # KV events on :5557, FPM\n" +
			"  mocker-server serve m --engine-type sglang --speedup-ratio 10",
		Args: atMostModel,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadServeConfig(cmd, args, stderr)
			if err != nil {
				return err
			}
			if cfg.AdminKey == "" {
				// The admin key also guards /admin/faults on the API port.
				cfg.AdminKey = admin.key
			}
			return serveFunc(cmd.Context(), cfg, admin, stdout, stderr)
		},
	}
	config.RegisterFlags(cmd.Flags())
	addAdminFlags(cmd.Flags(), &admin, -1)
	setGroupedHelp(cmd)
	return cmd
}

// atMostModel accepts the optional positional MODEL.
func atMostModel(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return &config.Error{Problems: []string{fmt.Sprintf("%s accepts at most one positional argument (MODEL), got %d: %q", cmd.Name(), len(args), args)}}
	}
	return nil
}

// addAdminFlags registers the admin API flags shared by serve and fleet.
func addAdminFlags(fs *pflag.FlagSet, a *adminFlags, defaultPort int) {
	fs.IntVar(&a.port, "admin-port", defaultPort, "admin API port (-1: no admin API, 0: a free port)")
	fs.StringVar(&a.host, "admin-host", "127.0.0.1", "admin API host")
	fs.StringVar(&a.key, "admin-key", "", "bearer token every admin API call must carry (required when --admin-host is not loopback)")
	fs.BoolVar(&a.allowInsecure, "admin-allow-insecure", false, "allow a keyless admin API on a non-loopback --admin-host (a trusted network)")
	// The admin API is part of the server (serve and fleet).
	setGroup(fs, config.GroupServer.String(), "admin-port", "admin-host", "admin-key", "admin-allow-insecure")
}

// serveLoadOptions returns the configuration sources of serve: the flags
// and the positional MODEL.
func serveLoadOptions(cmd *cobra.Command, args []string) (config.LoadOptions, error) {
	opts := config.OptionsFromFlags(cmd.Flags())
	if len(args) == 1 {
		if m, ok := opts.Overlay["model"].(string); ok && m != args[0] {
			return opts, &config.Error{Problems: []string{
				fmt.Sprintf("model given twice: positional %q and --model %q", args[0], m),
			}}
		}
		opts.Overlay["model"] = args[0]
	}
	return opts, nil
}

// loadServeConfig loads and validates the configuration of serve: sources
// from the flags, the positional MODEL, warnings printed to stderr.
func loadServeConfig(cmd *cobra.Command, args []string, stderr io.Writer) (*config.Config, error) {
	opts, err := serveLoadOptions(cmd, args)
	if err != nil {
		return nil, err
	}
	cfg, warnings, err := config.Load(opts)
	if err != nil {
		// Warnings are about a server that would start; this one will not.
		return nil, err
	}
	printWarnings(stderr, warnings)
	printNoEffect(cmd, stderr)
	return cfg, nil
}

func printWarnings(stderr io.Writer, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
}

// printNoEffect names, once at startup, the vLLM flags given that the mock
// accepts without effect.
func printNoEffect(cmd *cobra.Command, stderr io.Writer) {
	if ignored := config.NoEffectFlags(cmd.Flags()); len(ignored) > 0 {
		fmt.Fprintf(stderr, "accepted, no effect: %s\n", strings.Join(ignored, ", "))
	}
}

// serveFunc runs serve with the validated configuration until ctx is done
// (runServer, server.go). The command-line tests swap in printConfig to
// inspect the validated configuration.
var serveFunc = runServer

// printConfig prints the configuration (API and admin keys redacted) as
// indented JSON.
func printConfig(_ context.Context, cfg *config.Config, _ adminFlags, stdout, _ io.Writer) error {
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
