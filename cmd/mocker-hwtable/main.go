// Command mocker-hwtable compares mocker-server's hardware timing model with
// published end-to-end measurements: for every point of a points file
// (testdata/hardware/published.csv) it runs `mocker-server replay
// --hardware … --concurrency C --json` and prints a markdown table of the
// absolute percentage errors per point and their medians per GPU, engine,
// model and metric. Points the model cannot run are listed with replay's
// reason, never dropped. See docs/hardware-validation.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the command; it returns the exit status: 0, 1 on a failure to run,
// 2 on bad flags or a bad points file.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mocker-hwtable", flag.ContinueOnError)
	fs.SetOutput(stderr)
	points := fs.String("points", "testdata/hardware/published.csv", "published points (CSV, see testdata/hardware/README.md)")
	replayBin := fs.String("replay", "bin/mocker-server", "the mocker-server binary to run replay with")
	only := fs.String("only", "", "compare only points whose id, model or gpu matches this regular expression")
	var o Options
	fs.IntVar(&o.RequestsPerClient, "requests-per-client", 10, "closed-loop points without a stated request count: requests per client")
	fs.IntVar(&o.MinRequests, "min-requests", 100, "closed-loop points without a stated request count: at least this many requests")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "give up on one replay run after this long (its points are skipped)")
	fs.IntVar(&o.Jobs, "jobs", 1, "replay runs at once")
	fs.DurationVar(&o.ClientDelay, "client-delay", time.Millisecond, "closed-loop points: replay's --client-delay, a benchmark client's turnaround (0: none)")
	fs.BoolVar(&o.MeasuredAllReduce, "measured-allreduce", false, "price every all-reduce from the GPU's measured table (default: GPUs linked over PCIe run replay --gpu-interconnect pcie at TP > 1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mocker-hwtable takes no arguments, got %q\n", fs.Args())
		return 2
	}
	if o.RequestsPerClient < 1 || o.MinRequests < 1 || o.Jobs < 1 || o.Timeout <= 0 || o.ClientDelay < 0 {
		fmt.Fprintln(stderr, "-requests-per-client, -min-requests and -jobs must be ≥ 1, -timeout > 0 and -client-delay ≥ 0")
		return 2
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		fmt.Fprintf(stderr, "-only: %v\n", err)
		return 2
	}
	o.Replay = *replayBin
	file, err := os.Open(*points)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	all, err := ReadPoints(file, *points)
	file.Close()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	var selected []Point
	for _, p := range all {
		if re.MatchString(p.ID) || re.MatchString(p.Model) || re.MatchString(p.GPU) {
			selected = append(selected, p)
		}
	}
	if len(selected) == 0 {
		fmt.Fprintf(stderr, "-only %q matches no point\n", *only)
		return 2
	}
	results, err := Predict(ctx, selected, o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := WriteTable(stdout, results, *points); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
