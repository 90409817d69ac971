// Command mocker-server is a GPU-free mock LLM inference server with an
// OpenAI-compatible HTTP API and a simulated vLLM/SGLang/TensorRT-LLM engine.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mocker-server/mocker-server/internal/config"
)

// version is the version string; set it at build time with
// -ldflags "-X main.version=1.2.3".
var version = "0.1.0-dev"

func main() {
	ctx, stop := shutdownOnSignals(os.Stderr, os.Exit)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err))
}

// run executes the command line args. It reports errors on stderr itself
// (a configuration error as one line per problem) and returns them so that
// main can pick the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := newRootCmd(stdout, stderr)
	err := commandTypo(root, args)
	if err == nil {
		root.SetArgs(withDefaultCommand(root, config.RewriteArgs(args)))
		err = root.ExecuteContext(ctx)
	}
	if err != nil {
		reportError(stderr, err)
	}
	return err
}

// exitCode maps run's error to the process exit status: 0 on success, 2 for
// configuration and usage errors (the conventional usage-error status, so
// scripts can tell a bad command line from a runtime failure), 1 for
// anything else.
func exitCode(err error) int {
	var cfgErr *config.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &cfgErr):
		return 2
	default:
		return 1
	}
}

func reportError(w io.Writer, err error) {
	var cfgErr *config.Error
	if errors.As(err, &cfgErr) {
		// One style for every error line: the program's name first.
		for _, p := range cfgErr.Problems {
			fmt.Fprintf(w, "mocker-server: %s\n", p)
		}
		return
	}
	fmt.Fprintf(w, "mocker-server: %v\n", err)
}
