package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
)

// pprofEnv names the environment variable that turns on the profiling
// endpoint: MOCKER_PPROF=127.0.0.1:6060 serves net/http/pprof's handlers
// (/debug/pprof/...) on that address, on a listener of its own, for the
// life of the process. Unset (the default) means no profiling endpoint.
// It is an environment variable rather than a serve flag so the
// configuration surface stays vLLM's.
const pprofEnv = "MOCKER_PPROF"

// startPprof starts the profiling endpoint when MOCKER_PPROF is set.
func startPprof(stderr io.Writer) error {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", pprofEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	fmt.Fprintf(stderr, "pprof on http://%s/debug/pprof/\n", ln.Addr())
	go func() { _ = http.Serve(ln, mux) }()
	return nil
}
