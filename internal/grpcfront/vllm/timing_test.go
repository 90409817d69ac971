package vllm_test

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
)

// TestPacedStreamsFollowTheTimingModel is docs/BENCHMARKS.md's gRPC
// timing check, opt-in because it needs a quiet machine:
//
//	MOCKER_GRPC_TIMING=1 go test -run TestPacedStreamsFollowTheTimingModel -count 1 -v ./internal/grpcfront/vllm
//
// 1,000 concurrent streams (closed loop, MOCKER_GRPC_TIMING_REQUESTS per
// client, default 3) of 50 tokens from 32-token prompts, fixed timing
// 0 ms prefill + 20 ms decode per pass: the model's e2e is 50 passes ×
// 20 ms = 1,000 ms. The e2e of a request is from the call to its
// complete message. Server and clients share the process, unless
// MOCKER_GRPC_TIMING_ADDR names a server started with the same settings
// (mocker-server serve --grpc-port P --output-len-mode max --timing-model
// fixed --fixed-prefill-ms 0 --fixed-decode-ms 20 --max-num-seqs 1024
// --no-enable-prefix-caching), as the HTTP benchmark runs mocker-bench
// against a server of its own. MOCKER_GRPC_TIMING_CONNS spreads the
// clients over that many connections (default 1).
func TestPacedStreamsFollowTheTimingModel(t *testing.T) {
	if os.Getenv("MOCKER_GRPC_TIMING") == "" {
		t.Skip("set MOCKER_GRPC_TIMING=1 to run the timing check (it needs a quiet machine)")
	}
	const (
		clients = 1000
		tokens  = 50
		ideal   = tokens * 20 * time.Millisecond
	)
	perClient := 3
	if v, err := strconv.Atoi(os.Getenv("MOCKER_GRPC_TIMING_REQUESTS")); err == nil && v > 0 {
		perClient = v
	}
	var e *env
	if addr := os.Getenv("MOCKER_GRPC_TIMING_ADDR"); addr != "" {
		e = dial(t, addr)
	} else {
		e = start(t, map[string]any{"output_len_mode": "max", "speedup_ratio": 1, "timing_model": "fixed", "fixed_prefill_ms": 0,
			"fixed_decode_ms": 20, "max_num_seqs": 1024, "enable_prefix_caching": false})
	}
	// Clients spread over connections, as a gateway's do: one HTTP/2
	// connection carrying all 1,000 streams would measure its single
	// reader and writer goroutines, not the engine's schedule.
	conns := 1
	if v, err := strconv.Atoi(os.Getenv("MOCKER_GRPC_TIMING_CONNS")); err == nil && v > 0 {
		conns = v
	}
	clientsOf := make([]vllmpb.VllmEngineClient, conns)
	clientsOf[0] = e.client
	for i := 1; i < conns; i++ {
		clientsOf[i] = dial(t, e.addr).client
	}
	ctx := ctxTimeout(t, 10*time.Minute)
	var (
		mu         sync.Mutex
		e2e, ttft  []time.Duration
		errs       int
		wg         sync.WaitGroup
		ramp       = time.Second / clients
		startAt    = time.Now()
		badLengths int
	)
	for c := range clients {
		wg.Go(func() {
			time.Sleep(time.Until(startAt.Add(time.Duration(c) * ramp)))
			for r := range perClient {
				prompt := seq(1+(c*perClient+r)%1000, 32)
				t0 := time.Now()
				st, err := clientsOf[c%conns].Generate(ctx, tokenized(fmt.Sprintf("c%d-%d", c, r), prompt,
					&vllmpb.SamplingParams{MaxTokens: u32(tokens), IgnoreEos: true}, true))
				var first time.Duration
				n := 0
				for err == nil {
					var resp *vllmpb.GenerateResponse
					resp, err = st.Recv()
					if err != nil {
						break
					}
					if ch := resp.GetChunk(); ch != nil {
						if n == 0 && len(ch.GetTokenIds()) > 0 {
							first = time.Since(t0)
						}
						n += len(ch.GetTokenIds())
					}
				}
				d := time.Since(t0)
				mu.Lock()
				if err != io.EOF {
					errs++
				} else {
					e2e, ttft = append(e2e, d), append(ttft, first)
					if n != tokens {
						badLengths++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if errs > 0 || badLengths > 0 {
		t.Fatalf("%d errors, %d streams of the wrong length", errs, badLengths)
	}
	slices.Sort(e2e)
	slices.Sort(ttft)
	pct := func(s []time.Duration, p float64) time.Duration { return s[int(p*float64(len(s)-1))] }
	p50, p99 := pct(e2e, 0.5), pct(e2e, 0.99)
	t.Logf("%d requests: e2e p50 %.1f ms (%+.1f %%), p99 %.1f ms (%+.1f %%); TTFT p50 %.1f ms, p99 %.1f ms",
		len(e2e), ms(p50), 100*(float64(p50)/float64(ideal)-1), ms(p99), 100*(float64(p99)/float64(ideal)-1),
		ms(pct(ttft, 0.5)), ms(pct(ttft, 0.99)))
	if float64(p50) > 1.02*float64(ideal) {
		t.Errorf("e2e p50 %.1f ms is more than 2 %% above the model's %v", ms(p50), ideal)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
