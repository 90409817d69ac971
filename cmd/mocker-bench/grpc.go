package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mocker-server/mocker-server/internal/grpcload"
)

// runGRPC is `mocker-bench grpc`: a closed loop of streaming Generate
// calls on a gRPC front end (internal/grpcload), as a gateway sends them.
//
//	mocker-bench grpc --addr 127.0.0.1:50051 --protocol sglang --concurrency 256 --duration 10s --max-tokens 1000
func runGRPC(args []string, stdout, stderr io.Writer) int {
	cfg := grpcload.Defaults()
	fs := flag.NewFlagSet("mocker-bench grpc", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", "", "host:port of the server's gRPC port (--grpc-port)")
	proto := fs.String("protocol", string(cfg.Protocol), "service: sglang (SglangScheduler) | vllm (VllmEngine)")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "streams in flight (closed loop)")
	fs.IntVar(&cfg.Conns, "conns", 0, "HTTP/2 connections the streams share (0 = one per 64 streams)")
	fs.IntVar(&cfg.Requests, "requests", 0, "stop after this many requests")
	fs.DurationVar(&cfg.Duration, "duration", 0, "stop starting requests after this long")
	fs.IntVar(&cfg.PromptTokens, "prompt-tokens", cfg.PromptTokens, "prompt length in token ids")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "output tokens per request (sent with ignore_eos)")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "prompt generator seed")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "per-request timeout")
	fs.DurationVar(&cfg.Ramp, "ramp", 0, "spread the streams' first requests over this long")
	jsonOut := fs.String("json", "", "write the result as JSON to this file (- = stdout, replaces the table)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mocker-bench grpc: unexpected arguments %q\n", fs.Args())
		return 2
	}
	cfg.Protocol = grpcload.Protocol(*proto)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := grpcload.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mocker-bench grpc: %v\n", err)
		return 2
	}
	if err := writeReport(stdout, *jsonOut, res.WriteTable, func(w io.Writer) error { return writeJSON(w, res) }); err != nil {
		fmt.Fprintf(stderr, "mocker-bench grpc: %v\n", err)
		return 1
	}
	if res.Errors > 0 {
		return 3
	}
	return 0
}
