package routerlab

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// TestDriverOverhead2000Streams measures the driver holding 2,000 streams
// (docs/BENCHMARKS.md, "Router lab driver"). It is a measurement, not a
// unit test: it runs only with ROUTERLAB_BENCH=1, best as
//
//	ROUTERLAB_BENCH=1 taskset -c 0 env GOMAXPROCS=1 go test -count=1 -v -run TestDriverOverhead2000Streams ./internal/routerlab/
//
// which puts the driver on core 0 and the worker (a mocker-server fleet of
// one, started with taskset -c 1 when the machine has two cores) on the
// other. Every pass of the fixed timing model lasts pass = 200 ms, prefill or
// decode, and the engine starts each pass at the previous one's deadline,
// so the engine's modeled token times lie on one grid T0 + k·pass. A
// token's client lag is its receive time minus the grid point before it
// (T0 estimated per second of run as the earliest receive); the worker
// measures its own share, deadline to write, in
// mocker_token_delivery_lag_seconds. The client's overhead is the
// difference.
func TestDriverOverhead2000Streams(t *testing.T) {
	if os.Getenv("ROUTERLAB_BENCH") != "1" {
		t.Skip("a measurement: set ROUTERLAB_BENCH=1")
	}
	const (
		streams = 2000
		outLen  = 50
		pass    = 200 * time.Millisecond
	)
	bin := filepath.Join(t.TempDir(), "mocker-server")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/mocker-server").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	args := []string{"fleet", "--workers", "1", "--base-port", "0", "--admin-port", "0", "--timing-model", "fixed",
		"--fixed-prefill-ms", "200", "--fixed-decode-ms", "200", "--max-num-seqs", "4096", "--num-gpu-blocks", "65536",
		"--max-num-batched-tokens", "65536"}
	cmd := exec.Command(bin, args...)
	if runtime.NumCPU() >= 2 {
		if tp, err := exec.LookPath("taskset"); err == nil {
			cmd = exec.Command(tp, append([]string{"-c", "1", bin}, args...)...)
		}
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var admin, worker string
	sc := bufio.NewScanner(stderr)
	for (admin == "" || worker == "") && sc.Scan() {
		line := sc.Text()
		if u, ok := strings.CutPrefix(line, "admin API on "); ok {
			admin = u
		}
		if u, ok := strings.CutPrefix(line, "listening on "); ok {
			worker = u
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if admin == "" || worker == "" {
		t.Fatal("the fleet did not start")
	}

	var mu sync.Mutex
	recv := make([]time.Time, 0, streams*outLen)
	in, _ := replay.ParseDist("16")
	out, _ := replay.ParseDist(strconv.Itoa(outLen))
	src, err := replay.NewSynthetic(replay.SyntheticOptions{Requests: streams, Rate: 2000, Arrival: replay.ArrivalFixed,
		Input: in, Output: out, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var cpu0, cpu1 runtimeCPU
	cpu0.read()
	rep, err := Run(context.Background(), src, Options{URL: worker, Admin: admin, MaxInflight: streams,
		SampleEvery: time.Second, Offline: OfflineOptions{Skip: true}, OnToken: func(now time.Time) {
			mu.Lock()
			recv = append(recv, now)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	cpu1.read()
	if rep.Online.Completed != streams || rep.Online.Failed != 0 {
		t.Fatalf("%d of %d streams completed, %d failed", rep.Online.Completed, streams, rep.Online.Failed)
	}
	peak := 0.0
	for _, s := range rep.Samples {
		peak = max(peak, slices.Max(s.Running))
	}

	// Client lag against the grid, T0 re-estimated per second.
	slices.SortFunc(recv, func(a, b time.Time) int { return a.Compare(b) })
	lags := make([]float64, 0, len(recv))
	for i := 0; i < len(recv); {
		j := i
		for j < len(recv) && recv[j].Sub(recv[i]) < time.Second {
			j++
		}
		phase := time.Duration(math.MaxInt64)
		for _, r := range recv[i:j] {
			phase = min(phase, time.Duration(r.UnixNano()%int64(pass)))
		}
		for _, r := range recv[i:j] {
			lag := (time.Duration(r.UnixNano()%int64(pass)) - phase + pass) % pass
			lags = append(lags, float64(lag)/float64(time.Millisecond))
		}
		i = j
	}
	client := replay.Summarize(lags)
	server := scrapeLagQuantiles(t, worker, 0.5, 0.9, 0.99)
	t.Logf("%d streams, %d tokens, peak %v running on the worker; driver CPU %.1f s over %.1f s wall (GOMAXPROCS %d)",
		streams, len(recv), peak, cpu1.sub(cpu0).Seconds(), rep.WallS, runtime.GOMAXPROCS(0))
	t.Logf("client lag behind the engine's modeled token times: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms, max %.3f ms",
		client.P50, client.P90, client.P99, client.Max)
	t.Logf("worker's own deadline-to-write lag (mocker_token_delivery_lag_seconds, bucket upper bounds): p50 ≤ %.3f ms, p90 ≤ %.3f ms, p99 ≤ %.3f ms",
		server[0], server[1], server[2])
	t.Logf("client-side overhead (client lag − worker lag): p50 ≥ %.3f ms, p90 ≥ %.3f ms, p99 ≥ %.3f ms",
		client.P50-server[0], client.P90-server[1], client.P99-server[2])
	if peak < streams*0.95 {
		t.Errorf("the worker ran at most %v streams at once, want about %d", peak, streams)
	}
}

// runtimeCPU is this process's user+system CPU time.
type runtimeCPU struct{ d time.Duration }

func (c *runtimeCPU) read() {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return
	}
	f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	c.d = time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
}

func (c runtimeCPU) sub(o runtimeCPU) time.Duration { return c.d - o.d }

// scrapeLagQuantiles reads the worker's delivery-lag histogram and returns
// the upper bounds of the buckets holding the quantiles qs, in ms.
func scrapeLagQuantiles(t *testing.T, worker string, qs ...float64) []float64 {
	resp, err := http.Get(worker + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type bucket struct{ le, n float64 }
	var bs []bucket
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "mocker_token_delivery_lag_seconds_bucket{") {
			continue
		}
		i := strings.Index(line, `le="`)
		j := strings.Index(line[i+4:], `"`)
		le, err1 := strconv.ParseFloat(line[i+4:i+4+j], 64)
		n, err2 := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		bs = append(bs, bucket{le, n})
	}
	if len(bs) == 0 {
		t.Fatal("no mocker_token_delivery_lag_seconds on the worker")
	}
	total := bs[len(bs)-1].n
	q := func(f float64) float64 {
		for _, b := range bs {
			if b.n >= f*total {
				return b.le * 1000
			}
		}
		return math.Inf(1)
	}
	out := make([]float64, len(qs))
	for i, f := range qs {
		out[i] = q(f)
	}
	return out
}
