package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// exitForced is the exit status when a second signal cuts the graceful
// shutdown short.
const exitForced = 1

// shutdownSignals end the server gracefully. SIGHUP is among them: a
// terminal hang-up or a supervisor's reload request must not kill the
// process mid-stream (Go's default for SIGHUP is to exit at once, leaving
// streams without their final event and ZMQ sockets unclosed).
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// shutdownOnSignals returns a context that ends at the first shutdown
// signal (graceful shutdown: --shutdown-grace for in-flight requests, then
// their final error events, then the engines and publishers close). A
// second signal calls exit(exitForced) at once. stop releases the signals.
func shutdownOnSignals(stderr io.Writer, exit func(int)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, shutdownSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "received %v: shutting down gracefully (send another signal to exit at once)\n", sig)
			cancel()
		case <-done:
			return
		}
		select {
		case sig := <-sigs:
			fmt.Fprintf(stderr, "received %v again: exiting now\n", sig)
			exit(exitForced)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
