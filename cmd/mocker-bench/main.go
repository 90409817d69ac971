// Command mocker-bench is a load generator for OpenAI-compatible
// inference endpoints (see internal/loadgen and docs/BENCHMARKS.md).
//
//	mocker-bench --url http://127.0.0.1:8000 --concurrency 100 --duration 30s --max-tokens 128
//	mocker-bench --rate 50 --requests 2000 --completions --json result.json
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mocker-server/mocker-server/internal/loadgen"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg := loadgen.Defaults()
	fs := flag.NewFlagSet("mocker-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.URL, "url", cfg.URL, "server base URL (http only)")
	fs.StringVar(&cfg.Path, "path", "", "endpoint path (default /v1/chat/completions or /v1/completions)")
	completions := fs.Bool("completions", false, "use /v1/completions instead of chat")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model name sent in requests")
	fs.StringVar(&cfg.APIKey, "api-key", os.Getenv("OPENAI_API_KEY"), "Bearer API key (default $OPENAI_API_KEY)")
	fs.BoolVar(&cfg.NoStream, "no-stream", false, "send non-streaming requests")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "connections: requests in flight (closed loop) or their cap (open loop)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: Poisson arrivals per second (0 = closed loop)")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop starting requests after this long")
	fs.IntVar(&cfg.Requests, "requests", 0, "stop after this many requests")
	fs.DurationVar(&cfg.Ramp, "ramp", cfg.Ramp, "spread the first requests over this long (negative = 100µs per connection, max 2s)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per-request timeout")
	fs.IntVar(&cfg.PromptTokens, "prompt-tokens", cfg.PromptTokens, "prompt length in words (≈ tokens)")
	fs.IntVar(&cfg.SharedPrefix, "shared-prefix", 0, "words of the prompt taken from a shared prefix")
	fs.IntVar(&cfg.NumPrefixes, "num-prefixes", 1, "number of distinct shared prefixes")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "output tokens per request (max_tokens)")
	noIgnoreEOS := fs.Bool("no-ignore-eos", false, "do not send ignore_eos (outputs may end early)")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "prompt generator seed")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- = stdout, replaces the table)")
	progress := fs.Bool("progress", false, "show the progress bar even when stderr is not a terminal")
	noProgress := fs.Bool("no-progress", false, "never show the progress bar")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mocker-bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg.Chat = !*completions
	cfg.IgnoreEOS = !*noIgnoreEOS

	var opts loadgen.Options
	if !*noProgress && (*progress || isTerminal(os.Stderr)) {
		opts.Progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := loadgen.Run(ctx, cfg, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mocker-bench: %v\n", err)
		return 1
	}
	if *jsonOut != "-" {
		res.WriteTable(stdout)
	}
	if *jsonOut != "" {
		w := stdout
		if *jsonOut != "-" {
			f, err := os.Create(*jsonOut)
			if err != nil {
				fmt.Fprintf(stderr, "mocker-bench: %v\n", err)
				return 1
			}
			defer f.Close()
			w = f
		}
		if err := res.WriteJSON(w); err != nil {
			fmt.Fprintf(stderr, "mocker-bench: %v\n", err)
			return 1
		}
	}
	if res.Errors > 0 {
		return 3
	}
	return 0
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
