package fleet

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/loadgen"
)

// The scale checks of docs/BENCHMARKS.md ("Fleet"). They take tens of
// seconds and a quiet machine, so they run only when asked:
//
//	MOCKER_FLEET_SCALE=1 go test -run TestFleetScale -count 3 -v ./internal/fleet
//	scripts/fleet-bench.sh    # the fleet in its own process, pinned apart from the clients

func scaleEnabled(t *testing.T) {
	if os.Getenv("MOCKER_FLEET_SCALE") == "" {
		t.Skip("set MOCKER_FLEET_SCALE=1 to run the fleet scale checks")
	}
}

// vmRSS returns the process's resident set size in bytes.
func vmRSS(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

func startScaleFleet(t *testing.T, n int, overlay map[string]any) (*Fleet, time.Duration) {
	t.Helper()
	overlay["log_level"] = "warn"
	members, _, err := Plan(Spec{Workers: n, Base: testLoadOptions(overlay)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f, err := Start(context.Background(), members, Options{ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Cleanup(f.Stop)
	return f, took
}

// 256 workers start in ≤ 5 s with an idle RSS ≤ 2 GiB, then serve 4
// concurrent streams × 50 tokens each at 20 ms per pass.
func TestFleetScale256(t *testing.T) {
	scaleEnabled(t)
	workers, perWorker, tokens := scaleWorkers(256), 4, 50
	urls := make([]string, workers)
	if base, err := strconv.Atoi(os.Getenv("MOCKER_FLEET_BASE_PORT")); err == nil {
		// A fleet in another process (scripts/fleet-bench.sh), so that
		// server and clients can be pinned to different cores.
		for i := range urls {
			urls[i] = "http://127.0.0.1:" + strconv.Itoa(base+i)
		}
	} else {
		f, took := startScaleFleet(t, workers, map[string]any{"timing_model": "fixed",
			"fixed_prefill_ms": 0, "fixed_decode_ms": 20})
		runtime.GC()
		time.Sleep(500 * time.Millisecond)
		rss := vmRSS(t)
		t.Logf("FLEET start: %d workers in %v, idle RSS %.0f MiB", workers, took.Round(time.Millisecond), float64(rss)/(1<<20))
		if took > 5*time.Second || rss > 2<<30 {
			t.Errorf("start %v (≤ 5 s), RSS %d MiB (≤ 2048)", took, rss>>20)
		}
		for i := range urls {
			urls[i] = f.Worker(i).URL()
		}
	}

	// Every worker gets its own closed-loop client: 4 connections, 3
	// requests each, first requests spread over one second.
	results := make([]*loadgen.Result, workers)
	cpu0, wall0 := cpuTime(t), time.Now()
	var wg sync.WaitGroup
	for i := range workers {
		cfg := loadgen.Defaults()
		cfg.URL, cfg.Concurrency, cfg.Requests = urls[i], perWorker, 3*perWorker
		cfg.MaxTokens, cfg.PromptTokens, cfg.Ramp, cfg.Seed = tokens, 32, time.Second, int64(i+1)
		wg.Go(func() {
			res, err := loadgen.Run(context.Background(), cfg, loadgen.Options{})
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
				return
			}
			results[i] = res
		})
	}
	wg.Wait()
	t.Logf("FLEET load: this process used %.2f cores over %v", (cpuTime(t)-cpu0).Seconds()/time.Since(wall0).Seconds(), time.Since(wall0).Round(time.Millisecond))
	var p50s, p99s []float64
	requests, errs := 0, 0
	for _, r := range results {
		if r == nil {
			t.FailNow()
		}
		requests += r.Requests
		errs += r.Errors
		p50s = append(p50s, r.E2E.P50)
		p99s = append(p99s, r.E2E.P99)
	}
	slices.Sort(p50s)
	slices.Sort(p99s)
	ideal := float64(tokens) * 20
	median := p50s[len(p50s)/2]
	t.Logf("FLEET load: %d requests, %d errors; e2e p50 (median over workers) %.1f ms (%+.1f %% of %.0f ms ideal), worst worker p50 %.1f ms, median worker p99 %.1f ms",
		requests, errs, median, 100*(median/ideal-1), ideal, p50s[len(p50s)-1], p99s[len(p99s)/2])
	if errs != 0 || requests != workers*3*perWorker {
		t.Errorf("%d requests, %d errors", requests, errs)
	}
	if median > ideal*1.05 {
		t.Errorf("e2e p50 %.1f ms is more than 5 %% above the ideal %.0f ms", median, ideal)
	}
}

// 1,024 workers start and each serves one request.
func TestFleetScale1024(t *testing.T) {
	scaleEnabled(t)
	const workers = 1024
	f, took := startScaleFleet(t, workers, map[string]any{"speedup_ratio": "inf"})
	rss := vmRSS(t)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	failures := 0
	sem := make(chan struct{}, 32)
	for i := range workers {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			resp, err := client.Post(f.Worker(i).URL()+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"messages":[{"role":"user","content":"hello"}],"max_tokens":8}`))
			if err == nil {
				resp.Body.Close()
			}
			if err != nil || resp.StatusCode != 200 {
				mu.Lock()
				failures++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("FLEET 1024: started in %v, RSS %.0f MiB, %d requests in %v, %d failures",
		took.Round(time.Millisecond), float64(rss)/(1<<20), workers, time.Since(start).Round(time.Millisecond), failures)
	if failures != 0 {
		t.Errorf("%d of %d workers failed their request", failures, workers)
	}
}

// scaleWorkers is n unless MOCKER_FLEET_WORKERS overrides it (to compare
// the per-stream overhead at a smaller size on the same machine).
func scaleWorkers(n int) int {
	if v, err := strconv.Atoi(os.Getenv("MOCKER_FLEET_WORKERS")); err == nil && v > 0 {
		return v
	}
	return n
}

// cpuTime returns the CPU time (user + system) the process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
