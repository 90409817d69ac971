package routerlab

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
)

// fastFleet is a fleet whose passes are a few milliseconds, for tests that
// compare routings rather than time them.
var fastFleet = map[string]any{"timing_model": "fixed", "fixed_prefill_ms": 20, "fixed_decode_ms": 5, "enable_prompt_tokens_details": true}

func sharedPrefixWorkload(t *testing.T, requests int, rate float64) replay.Source {
	t.Helper()
	in, _ := replay.ParseDist("64")
	out, _ := replay.ParseDist("4")
	src, err := replay.NewSynthetic(replay.SyntheticOptions{Requests: requests, Rate: rate, Arrival: replay.ArrivalFixed,
		Input: in, Output: out, PrefixGroups: 12, PrefixTokens: 1024, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// TestPrefixBlindRouterScoresBelowKVAware puts the round-robin proxy, which
// ignores prefixes, in front of 4 workers on a workload of 12 shared
// 1,024-token prefixes: the report must say by how much it misses
// kv_aware's cache hits, in the verdict's first line, and the figure must be
// the ratio of the two hit rates it reports.
func TestPrefixBlindRouterScoresBelowKVAware(t *testing.T) {
	lf := startFleet(t, 4, fastFleet)
	proxy := roundRobinProxy(t, lf.urls)
	rep, err := Run(context.Background(), sharedPrefixWorkload(t, 60, 30), Options{URL: proxy.url, Admin: lf.admin, MaxInflight: 6})
	if err != nil {
		t.Fatal(err)
	}
	text := reportText(t, rep)
	t.Logf("\n%s", text)
	for _, r := range rep.rows {
		if r.res.err != "" {
			t.Logf("request %d on %q: %s (tokens %d)", r.req.Index, r.res.worker, r.res.err, r.res.tokens)
		}
	}
	if rep.Online.Completed != 60 {
		t.Fatalf("%d of 60 completed", rep.Online.Completed)
	}
	// Connections are reused: at most one per request in flight.
	if n := proxy.conns.Load(); n > 6 {
		t.Errorf("the driver opened %d connections for 60 requests with --max-inflight 6", n)
	}
	var kv *Side
	for i := range rep.Offline {
		if rep.Offline[i].Name == "kv_aware" {
			kv = &rep.Offline[i]
		}
	}
	if kv == nil || len(rep.Offline) != 4 {
		t.Fatalf("offline sides %v, want the four default policies", rep.OfflineRouters)
	}
	m := regexp.MustCompile(`^your router reached (\d+) % of kv_aware's cache hits \(hit rate ([\d.]+) % vs ([\d.]+) %\), TTFT p99 ([\d.]+)× kv_aware's`).
		FindStringSubmatch(rep.Verdict[0])
	if m == nil {
		t.Fatalf("first verdict line %q does not compare with kv_aware", rep.Verdict[0])
	}
	pct, _ := strconv.Atoi(m[1])
	if pct > 80 {
		t.Errorf("a prefix-blind router reached %d %% of kv_aware's hits; want visibly fewer (≤ 80 %%)", pct)
	}
	if want := int(100*rep.Online.PrefixCacheHitRate/kv.PrefixCacheHitRate + 0.5); pct != want {
		t.Errorf("verdict says %d %%, the hit rates give %d %%", pct, want)
	}
	if !strings.Contains(text, m[0][:20]) || !strings.Contains(text, "clairvoyant bound: hit rate") {
		t.Errorf("the terminal report lacks the verdict or the bound:\n%s", text)
	}
	if b := rep.Bound; b == nil || b.HitRate < kv.PrefixCacheHitRate {
		t.Errorf("clairvoyant bound %+v below kv_aware's %.3f", rep.Bound, kv.PrefixCacheHitRate)
	}
}

// TestAttributionSurvivesHeaderStrippingRouter puts a round-robin proxy
// that drops the x-mocker-worker header in front of 2 workers: the driver
// must still attribute every answer to the worker the proxy picked, from the
// mocker_worker field the workers put beside the usage of the final chunk.
func TestAttributionSurvivesHeaderStrippingRouter(t *testing.T) {
	lf := startFleet(t, 2, fastFleet)
	proxy := roundRobinProxy(t, lf.urls)
	proxy.stripWorker.Store(true)
	rep, err := Run(context.Background(), sharedPrefixWorkload(t, 20, 30), Options{URL: proxy.url, MaxInflight: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Online.Completed != 20 {
		t.Fatalf("%d of 20 completed\n%s", rep.Online.Completed, reportText(t, rep))
	}
	if n := proxy.stripped.Load(); n < 20 {
		t.Fatalf("the proxy stripped the header from %d answers, want every one of 20", n)
	}
	picked := map[string]string{} // request id -> the worker round robin chose
	for k, id := range proxy.pickedOrder() {
		picked[id] = itoa(k % 2)
	}
	for _, r := range rep.rows {
		if want := picked[requestID(r.req.Index)]; r.res.worker != want {
			t.Errorf("request %d attributed to worker %q, the proxy sent it to %q", r.req.Index, r.res.worker, want)
		}
	}
}

// TestKillRestartShowsDeadWorkerAndRecovery kills worker 3 one second into
// the run and restarts it at 2.5 s, behind the round-robin proxy, which
// keeps sending every fourth request to it. The report's kill window must
// count exactly the requests the proxy failed to deliver to worker 3, the
// rebalancing time must show that the proxy never stopped (the last failure
// is near the restart), and the restart window must show worker 3 serving
// again within a few requests.
func TestKillRestartShowsDeadWorkerAndRecovery(t *testing.T) {
	lf := startFleet(t, 4, fastFleet)
	proxy := roundRobinProxy(t, lf.urls)
	faults, err := ParseFaults(strings.NewReader("# kill and restart\n1s 3 kill\n2500ms 3 restart\n"), "faults")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), sharedPrefixWorkload(t, 80, 20), Options{URL: proxy.url, Admin: lf.admin,
		Faults: faults, SampleEvery: 100 * time.Millisecond, Offline: OfflineOptions{Skip: true}})
	if err != nil {
		t.Fatal(err)
	}
	text := reportText(t, rep)
	t.Logf("\n%s", text)
	if len(rep.Faults) != 2 || rep.Faults[0].Action != "kill" || rep.Faults[1].Action != "restart" || rep.Faults[0].Error != "" || rep.Faults[1].Error != "" {
		t.Fatalf("faults %+v, want a kill and a restart applied", rep.Faults)
	}
	kill, restart := rep.Faults[0], rep.Faults[1]
	dead := int(proxy.failed[3].Load())
	// Requests sent while the admin calls were in flight may go either way.
	inFlight := func(f FaultOutcome) int {
		n := 0
		for _, r := range rep.rows {
			if s := r.res.sent.Sub(rep.start).Seconds(); !r.res.sent.IsZero() && s >= f.SentS && s < f.AppliedS {
				n++
			}
		}
		return n
	}
	// The kill takes effect while its admin call is answered and the
	// restart likewise, so a request sent in the restart call's flight may
	// still fail (it counts in the restart's window); and a stream the kill
	// cut before the proxy had flushed its headers fails without a worker
	// too, though the proxy delivered it. Every failure without a worker
	// must be in the kill's account, and most must be sends to the dead
	// worker.
	around := kill.FailedUnattributed + kill.CutUnattributed + restart.FailedUnattributed
	if dead < 4 || around != rep.Online.Unattributed || rep.Online.Unattributed < dead || rep.Online.Unattributed > dead+3 ||
		kill.FailedUnattributed < dead-3 || restart.FailedUnattributed > inFlight(restart) {
		t.Errorf("failed requests without a worker: %d sent after the kill, %d cut by it, %d after the restart, %d in all; the proxy failed to deliver %d to worker 3",
			kill.FailedUnattributed, kill.CutUnattributed, restart.FailedUnattributed, rep.Online.Unattributed, dead)
	}
	for i := 0; i < 3; i++ {
		if n := proxy.failed[i].Load(); n != 0 {
			t.Errorf("worker %d: %d undelivered requests; only worker 3 was down", i, n)
		}
	}
	if kill.Served > inFlight(kill) {
		t.Errorf("a dead worker served %d requests; only %d were sent while the kill call was in flight", kill.Served, inFlight(kill))
	}
	// Round robin never rebalances: it fails until the restart.
	if kill.LastFailureS < kill.WindowS-0.5 {
		t.Errorf("last failure %.2f s into a %.2f s outage; round robin keeps failing until the restart", kill.LastFailureS, kill.WindowS)
	}
	if restart.FirstServedS < 0 || restart.FirstServedS > restart.AppliedS-restart.SentS+0.5 {
		t.Errorf("worker 3 served again %.2f s after the restart; round robin sends it every 4th request (0.2 s)", restart.FirstServedS)
	}
	if attributed := rep.Online.Failed - rep.Online.Unattributed; attributed != kill.CutInFlight+kill.FailedAtWorker {
		t.Errorf("%d failed requests online with a worker's answer, want the %d cut on worker 3", attributed, kill.CutInFlight+kill.FailedAtWorker)
	}
	if !strings.Contains(text, "faults:") || !strings.Contains(text, "kill") {
		t.Errorf("the terminal report has no faults section:\n%s", text)
	}
	var s3 *WorkerSamples
	for i := range rep.Samples {
		if rep.Samples[i].Worker == "3" {
			s3 = &rep.Samples[i]
		}
	}
	if s3 == nil || s3.Failed == 0 {
		t.Errorf("worker 3's samples %+v: scrapes during the outage must fail", s3)
	}
}

// TestInterruptGivesPartialReport cancels the run (Ctrl-C) a second into a
// ten-second workload: the report covers what was sent and says it is
// partial.
func TestInterruptGivesPartialReport(t *testing.T) {
	lf := startFleet(t, 2, fastFleet)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rep, err := Run(ctx, sharedPrefixWorkload(t, 100, 10), Options{URL: lf.urls[0], Admin: lf.admin})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Online.Requests < 5 || rep.Online.Requests > 20 {
		t.Fatalf("interrupted %v with %d requests sent; want a partial report of about 10", rep.Interrupted, rep.Online.Requests)
	}
	if !strings.Contains(reportText(t, rep), "interrupted: partial report") {
		t.Error("the table does not say the report is partial")
	}
	if len(rep.Offline) == 0 || rep.Offline[0].Requests != rep.Online.Requests {
		t.Errorf("the offline replays must cover the %d sent requests", rep.Online.Requests)
	}
}
