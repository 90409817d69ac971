package routerlab

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// TestOnline_AgreesWithOfflineRoundRobin drives a slice of the Mooncake
// sample through a round-robin reverse proxy in front of 4 real workers and
// checks the driver's account against the offline replay of the same
// requests: identical routing to round_robin, and prefix-cache hit rate,
// TTFT and ITL medians within 5 %. The fixed timing model makes passes
// 25–100 ms, so a timer's overshoot is small beside them. A busy machine
// only adds latency to the live side, so the run is tried up to 3 times;
// under the race detector only routing and hit rate are compared.
func TestOnline_AgreesWithOfflineRoundRobin(t *testing.T) {
	lf := startFleet(t, 4, map[string]any{
		"timing_model": "fixed", "fixed_prefill_ms": 100, "fixed_decode_ms": 25,
		"max_model_len": 65536, "enable_prompt_tokens_details": true,
	})
	trace := traceSlice(t, "shared-prefix-synthetic.jsonl", 60, 150, 16)
	var last string
	reordered := 0
	for attempt := 1; attempt <= 3; attempt++ {
		proxy := roundRobinProxy(t, lf.urls) // its round robin starts at worker 0, as offline
		// A fresh fleet state for each attempt: the prefix caches would
		// otherwise carry the previous attempt's blocks.
		if attempt > 1 {
			for i := range lf.urls {
				if err := newAdmin(lf.admin, "").call(context.Background(), "POST", "/workers/"+itoa(i)+"/reset_prefix_cache", nil, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		rep, err := Run(context.Background(), openSlice(t, trace), Options{URL: proxy.url, Admin: lf.admin, TimeScale: 0.5, MaxInflight: 64,
			Offline: OfflineOptions{Routers: []replay.RouterKind{replay.RoundRobin, replay.KVAware}}})
		if err != nil {
			t.Fatal(err)
		}
		on := rep.Online
		if on.Completed != 60 || on.Failed != 0 {
			t.Fatalf("online: %d completed, %d failed of %d\n%s", on.Completed, on.Failed, on.Requests, reportText(t, rep))
		}
		rr := rep.Offline[0]
		if rr.Name != "round_robin" {
			t.Fatalf("first offline side is %q", rr.Name)
		}
		// The offline replay gives requests in the order the driver wrote
		// them; a busy machine can let the proxy take two of them the
		// other way round (it records its order by X-Request-Id). Such an
		// attempt says nothing about routing and is repeated.
		var sentOrder []string
		for _, r := range sentRecords(rep.rows) {
			sentOrder = append(sentOrder, requestID(r.req.Index))
		}
		if !slices.Equal(proxy.pickedOrder(), sentOrder) {
			reordered++
			t.Logf("attempt %d: the proxy took requests in another order than they were sent; repeating", attempt)
			continue
		}
		// Routing: every request on the worker round_robin chose.
		routed := rr.SameRouting == 1
		if !routed {
			t.Logf("attempt %d: online routing matches offline round_robin for %.1f %% of requests", attempt, 100*rr.SameRouting)
		}
		checks := []struct {
			name           string
			online, replay float64
		}{
			{"prefix-cache hit rate", on.PrefixCacheHitRate, rr.PrefixCacheHitRate},
			{"TTFT p50", on.TTFTMs.P50, rr.TTFTMs.P50},
			{"ITL p50", on.ITLMs.P50, rr.ITLMs.P50},
		}
		if raceEnabled {
			checks = checks[:1]
		}
		ok := routed
		last = ""
		if !routed {
			last = "routing "
		}
		for _, c := range checks {
			dev := math.Abs(c.online-c.replay) / c.replay
			t.Logf("attempt %d: %s online %.4g, offline round_robin %.4g (%+.1f %%)", attempt, c.name, c.online, c.replay, 100*(c.online-c.replay)/c.replay)
			if !(dev <= 0.05) {
				ok = false
				last += c.name + " "
			}
		}
		if on.PrefixCacheHitRate <= 0 {
			t.Fatalf("no prefix-cache hits online: the shared-prefix slice must hit\n%s", reportText(t, rep))
		}
		if ok {
			t.Logf("\n%s", reportText(t, rep))
			return
		}
	}
	if reordered == 3 {
		t.Skip("the machine is too busy: in every attempt the proxy took requests out of send order")
	}
	if late := timerOvershoot(); late > 500*time.Microsecond && !strings.Contains(last, "routing") {
		t.Skipf("this machine is too busy to time live workers: a 10 ms sleep overshoots by %v (median of 20); last attempt disagreed on: %s", late, last)
	}
	t.Fatalf("online and offline disagree by more than 5 %% on: %s", last)
}

// timerOvershoot is the median lateness of a 10 ms sleep on this machine
// (20 tries): how much a live server's passes run over their model.
func timerOvershoot() time.Duration {
	late := make([]time.Duration, 20)
	for i := range late {
		t0 := time.Now()
		time.Sleep(10 * time.Millisecond)
		late[i] = time.Since(t0) - 10*time.Millisecond
	}
	slices.Sort(late)
	return late[len(late)/2]
}
