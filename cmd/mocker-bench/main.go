// Command mocker-bench is a load generator for OpenAI-compatible
// inference endpoints (see internal/loadgen and docs/BENCHMARKS.md).
//
//	mocker-bench --url http://127.0.0.1:8000 --concurrency 100 --duration 30s --max-tokens 128
//	mocker-bench --rate 50 --requests 2000 --completions --json result.json
//
// `mocker-bench trace` drives a trace or a synthetic workload through a
// router in front of a fleet and scores the router against offline replays
// of the same requests (internal/routerlab, docs/router-lab.md):
//
//	mocker-bench trace --url http://127.0.0.1:8080 --fleet-admin http://127.0.0.1:9000 --html lab.html trace.jsonl
//
// Two subcommands measure the write floor, the bare cost of the server's
// per-token write path: floor-write listens, accepts --conns connections
// and every --interval writes one --chunk-bytes SSE chunk to each of them
// (one non-blocking write(2) per connection through internal/sockwrite,
// the server's own write path, --writers goroutines over
// contiguous shards), reporting µs per write, CPU µs per write, the tick
// write time and the p99 delivery lag it implies; floor-read, run as
// another process (scripts/bench.sh floor pins the two to different
// cores), dials the connections and drains them until the writer closes
// them, then checks it received conns × (warmup + ticks) × chunk-bytes
// bytes. Give both the same flags.
//
//	mocker-bench floor-write --conns 10000 --ticks 50 --interval 100ms --json floor.json &
//	mocker-bench floor-read --conns 10000 --ticks 50 --interval 100ms
//
// `mocker-bench grpc` drives the gRPC front ends (--grpc-port) with
// streaming Generate calls, token ids in and out (internal/grpcload):
//
//	mocker-bench grpc --addr 127.0.0.1:50051 --protocol sglang --concurrency 256 --duration 10s
package main

import (
	"context"
	"encoding/json"
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
	if len(args) > 0 && (args[0] == "floor-write" || args[0] == "floor-read") {
		return runFloor(args[0], args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "trace" {
		return runTrace(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "grpc" {
		return runGRPC(args[1:], stdout, stderr)
	}
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
	if err := writeReport(stdout, *jsonOut, res.WriteTable, res.WriteJSON); err != nil {
		fmt.Fprintf(stderr, "mocker-bench: %v\n", err)
		return 1
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

// floorRead is floor-read's JSON report.
type floorRead struct {
	Config        loadgen.FloorConfig `json:"config"`
	BytesReceived int64               `json:"bytes_received"`
	ExpectedBytes int64               `json:"expected_bytes"`
}

// runFloor runs the floor-write or floor-read subcommand.
func runFloor(cmd string, args []string, stdout, stderr io.Writer) int {
	cfg := loadgen.FloorDefaults()
	fs := flag.NewFlagSet("mocker-bench "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "writer's listen address, reader's dial address")
	fs.IntVar(&cfg.Conns, "conns", 0, "connections (N, required)")
	fs.IntVar(&cfg.Ticks, "ticks", cfg.Ticks, "measured ticks")
	fs.IntVar(&cfg.Warmup, "warmup", cfg.Warmup, "warm-up ticks before them (written, not measured)")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "tick period")
	fs.IntVar(&cfg.ChunkBytes, "chunk-bytes", cfg.ChunkBytes, "bytes per write (one SSE chunk)")
	fs.IntVar(&cfg.Writers, "writers", cfg.Writers, "writer goroutines over contiguous shards of the connections")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- = stdout, replaces the table)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mocker-bench %s: unexpected arguments %q\n", cmd, fs.Args())
		return 2
	}
	if cfg.Conns <= 0 {
		fmt.Fprintf(stderr, "mocker-bench %s: --conns must be > 0\n", cmd)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var (
		table  func(io.Writer)
		report func(io.Writer) error
		status int
	)
	if cmd == "floor-write" {
		res, err := loadgen.RunFloorWriter(ctx, cfg)
		if err != nil {
			fmt.Fprintf(stderr, "mocker-bench %s: %v\n", cmd, err)
			return 1
		}
		table, report = res.WriteTable, res.WriteJSON
	} else {
		n, err := loadgen.RunFloorReader(ctx, cfg)
		if err != nil {
			if n > 0 {
				err = fmt.Errorf("%w (%d bytes received)", err, n)
			}
			fmt.Fprintf(stderr, "mocker-bench %s: %v\n", cmd, err)
			return 1
		}
		want := cfg.ExpectedBytes()
		if n != want {
			fmt.Fprintf(stderr, "mocker-bench %s: received %d bytes, want %d (same flags as floor-write?)\n", cmd, n, want)
			status = 3
		}
		table = func(w io.Writer) {
			fmt.Fprintf(w, "mocker-bench floor-read: %s, %d connections, %d bytes received (expected %d)\n",
				cfg.Addr, cfg.Conns, n, want)
		}
		report = func(w io.Writer) error {
			return writeJSON(w, floorRead{Config: cfg, BytesReceived: n, ExpectedBytes: want})
		}
	}
	if err := writeReport(stdout, *jsonOut, table, report); err != nil {
		fmt.Fprintf(stderr, "mocker-bench %s: %v\n", cmd, err)
		return 1
	}
	return status
}

// writeJSON writes v as JSON indented by two spaces.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeReport writes a run's report where --json (jsonOut) sends it: the
// table on stdout unless jsonOut is "-", and the JSON report on stdout ("-")
// or into the file jsonOut names (none when it is empty).
func writeReport(stdout io.Writer, jsonOut string, table func(io.Writer), report func(io.Writer) error) error {
	if jsonOut != "-" {
		table(stdout)
	}
	switch jsonOut {
	case "":
		return nil
	case "-":
		return report(stdout)
	}
	f, err := os.Create(jsonOut)
	if err != nil {
		return err
	}
	if err := report(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
