package calibrate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// timeNow is the wall clock; the runner measures real endpoints.
var timeNow = time.Now

// Options configure a calibration run. The zero value of each field is its
// default.
type Options struct {
	// Budget bounds the whole run, fit included (default 10 min).
	Budget time.Duration
	// MaxConcurrency bounds the requests in flight (default 64); the plan
	// is shaped so that no experiment needs more.
	MaxConcurrency int
	// Plan, when it has experiments, replaces the one NewPlan designs.
	Plan Plan
	// Progress, when set, is told after each request how many of the
	// planned requests are done.
	Progress func(done, total int)
}

// ExperimentRun is one experiment run once: what each of its streams
// measured.
type ExperimentRun struct {
	Experiment int `json:"experiment"`
	Round      int `json:"round"`
	// PrefixTokens is the measured token count of the shared prefix
	// (prefix experiments).
	PrefixTokens int      `json:"prefix_tokens,omitempty"`
	Results      []Result `json:"results"`
	// OverheadMs is the run's mean client-side TTFT overhead (see
	// Measurements.OverheadMs); 0 when the server does not say.
	OverheadMs float64 `json:"client_overhead_ms,omitempty"`
}

// Measurements are everything the probes measured.
type Measurements struct {
	Server   ServerInfo      `json:"server"`
	Plan     Plan            `json:"plan"`
	Runs     []ExperimentRun `json:"runs"`
	Rounds   int             `json:"rounds"`
	Elapsed  time.Duration   `json:"elapsed_ns"`
	Warnings []string        `json:"warnings,omitempty"`
	// Stopped says why the run ended before its planned rounds ("" when
	// it did not).
	Stopped string `json:"stopped,omitempty"`
	// OverheadMs + OverheadPerKTokMs × prompt tokens / 1000 is the part of
	// a request's client-side TTFT the server itself does not count (HTTP
	// handling, tokenization, the first chunk's way back): the client's
	// TTFT minus the server's own vllm:time_to_first_token_seconds, read
	// around every experiment run and fitted over the runs of one request
	// (where it is that request's exactly). The fit takes it out of every
	// TTFT, so the profile holds engine time only — a mock serving the
	// profile adds its own — and adds it back to every predicted TTFT in
	// the report. 0 when the server does not say.
	OverheadMs        float64 `json:"client_overhead_ms"`
	OverheadPerKTokMs float64 `json:"client_overhead_per_1k_prompt_tokens_ms"`
	// OverheadNote says where OverheadMs came from, or why it is 0.
	OverheadNote string `json:"client_overhead_note"`
}

// overheadOf is the client-side overhead of a request with r's prompt.
func (m *Measurements) overheadOf(r *Result) float64 {
	return m.OverheadMs + m.OverheadPerKTokMs*float64(r.PromptTokens)/1000
}

// ttftMs is a result's TTFT as the engine saw it: the client's minus the
// overhead.
func (m *Measurements) ttftMs(r *Result) float64 { return ms(r.TTFT()) - m.overheadOf(r) }

// Measure discovers the endpoint and runs the plan within the budget.
// Cancelling ctx (Ctrl-C) stops it; what was measured is returned with
// ctx's error.
func Measure(ctx context.Context, c *Client, opts Options) (*Measurements, error) {
	start := timeNow()
	if opts.Budget <= 0 {
		opts.Budget = 10 * time.Minute
	}
	if opts.MaxConcurrency <= 0 {
		opts.MaxConcurrency = 64
	}
	// The measuring part ends early enough to leave the fit its time.
	deadline := start.Add(opts.Budget * 9 / 10)
	mctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	info, err := c.Discover(mctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	plan := opts.Plan
	if len(plan.Experiments) == 0 {
		plan = NewPlan(PlanOptions{MaxConcurrency: opts.MaxConcurrency, MaxModelLen: info.MaxModelLen,
			KVTokens: info.BlockSize * info.NumGPUBlocks, Quick: opts.Budget < 5*time.Minute})
	}
	m := &Measurements{Server: info, Plan: plan}
	if !info.LengthParams {
		m.warn("the server refused ignore_eos/min_tokens: output lengths are whatever it generates (the fit uses the lengths it got)")
	}
	if !info.Tokenize {
		m.warn("no /tokenize: prompt lengths calibrated from usage.prompt_tokens")
	}
	p := newPrompts(c.counter(info))
	reqs, _, _ := plan.Totals()
	total := plan.Warmup + reqs*plan.Repeats
	var progressMu sync.Mutex
	done := 0
	progress := func() {
		progressMu.Lock()
		defer progressMu.Unlock()
		done++
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	for i := range plan.Warmup {
		if _, err := c.stream(mctx, p.tag(-1, i, 0)+text(256, i), 16, timeNow(), nil); err != nil && mctx.Err() == nil {
			m.warn(fmt.Sprintf("warm-up request %d failed: %v", i, err))
		}
		progress()
	}
	scrape := c.serverTTFT(mctx)
	haveTTFT := scrape.ok
	sem := make(chan struct{}, opts.MaxConcurrency)
rounds:
	for round := range plan.Repeats {
		for ei := range plan.Experiments {
			if mctx.Err() != nil {
				break rounds
			}
			run, err := runExperiment(mctx, c, p, sem, plan, ei, round, progress)
			if err != nil {
				if mctx.Err() != nil {
					break rounds // cut by the deadline or Ctrl-C: drop the partial run
				}
				return m, err
			}
			if haveTTFT {
				next := c.serverTTFT(mctx)
				run.overhead(scrape, next)
				scrape = next
			}
			m.Runs = append(m.Runs, run)
		}
		m.Rounds = round + 1
	}
	m.Elapsed = timeNow().Sub(start)
	if err := ctx.Err(); err != nil {
		return m, err
	}
	if m.Rounds < plan.Repeats {
		m.Stopped = fmt.Sprintf("budget: %d of %d rounds complete, %d experiment runs in all", m.Rounds, plan.Repeats, len(m.Runs))
		m.warn(m.Stopped)
	}
	m.checkResults()
	m.fitOverhead(haveTTFT)
	if len(m.Runs) == 0 {
		return m, errors.New("the budget ended before one experiment completed")
	}
	return m, nil
}

func (m *Measurements) warn(s string) { m.Warnings = append(m.Warnings, s) }

// overhead sets the run's client-side overhead from the server's TTFT
// histogram read before and after it. The server's count must have grown
// by exactly the requests measured (a prompt-length count on a server
// without /tokenize, say, is a request too), or the sums are not
// comparable and the run keeps 0. A run of one request also counts the
// server's queue time as overhead: alone on an idle engine a request waits
// for nothing the timing model knows (on a live engine, for its loop to
// wake), and the model would otherwise put that wait into every pass's
// prefill term.
func (run *ExperimentRun) overhead(before, after ttftScrape) {
	var clientSum float64
	n := 0
	for i := range run.Results {
		if r := &run.Results[i]; r.Err == "" && r.Tokens() > 0 {
			clientSum += ms(r.TTFT())
			n++
		}
	}
	if !before.ok || !after.ok || n == 0 || int(after.ttftCount-before.ttftCount) != n {
		return
	}
	server := after.ttftSum - before.ttftSum
	if n == 1 && int(after.queueCount-before.queueCount) == 1 {
		server -= after.queueSum - before.queueSum
	}
	run.OverheadMs = max((clientSum-1000*server)/float64(n), 0)
}

// fitOverhead fits the overhead's line over the runs of a single request
// (probe or batch of one) whose overhead is known, leaving out values over
// three times their median (a stall, not an overhead).
func (m *Measurements) fitOverhead(have bool) {
	if !have {
		m.OverheadNote = "the server has no vllm:time_to_first_token_seconds: client-side overhead stays in the prefill curve"
		return
	}
	var xs, ys []float64
	for _, run := range m.Runs {
		if len(run.Results) != 1 || run.OverheadMs <= 0 || run.Results[0].PromptTokens <= 0 {
			continue
		}
		xs = append(xs, float64(run.Results[0].PromptTokens)/1000)
		ys = append(ys, run.OverheadMs)
	}
	limit := 3 * median(ys)
	var sx, sy, sxx, sxy, n float64
	for i := range xs {
		if ys[i] <= limit {
			sx, sy, sxx, sxy, n = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i], n+1
		}
	}
	if n < 3 {
		m.OverheadNote = "fewer than 3 single-request runs with the server's TTFT: client-side overhead stays in the prefill curve"
		return
	}
	if d := n*sxx - sx*sx; d > 0 {
		m.OverheadPerKTokMs = max((n*sxy-sx*sy)/d, 0)
	}
	m.OverheadMs = max((sy-m.OverheadPerKTokMs*sx)/n, 0)
	m.OverheadNote = fmt.Sprintf("client TTFT minus the server's vllm:time_to_first_token_seconds over %.0f single-request runs", n)
}

// runExperiment runs one experiment once: each stream in its own goroutine,
// sent at its offset or trigger, under the concurrency semaphore.
func runExperiment(ctx context.Context, c *Client, p *prompts, sem chan struct{}, plan Plan, ei, round int,
	progress func()) (ExperimentRun, error) {
	e := plan.Experiments[ei]
	run := ExperimentRun{Experiment: ei, Round: round, Results: make([]Result, len(e.Streams))}
	texts := make([]string, len(e.Streams))
	var prefix string
	for si, s := range e.Streams {
		if s.Prefix > 0 && prefix == "" {
			n, err := p.fillerWords(ctx, s.Prefix)
			if err != nil {
				return run, fmt.Errorf("building prompts: %w", err)
			}
			prefix = p.tag(ei, round, -1) + text(n, 0)
			if run.PrefixTokens, err = p.count(ctx, prefix); err != nil {
				return run, fmt.Errorf("building prompts: %w", err)
			}
		}
		rest := s.Prompt - s.Prefix
		n, err := p.fillerWords(ctx, rest)
		if err != nil {
			return run, fmt.Errorf("building prompts: %w", err)
		}
		texts[si] = p.tag(ei, round, si) + text(n, si*31)
		if s.Prefix > 0 {
			texts[si] = prefix + " " + texts[si]
		}
	}
	finished := make([]chan struct{}, len(e.Streams))
	for i := range finished {
		finished[i] = make(chan struct{})
	}
	// Triggers on stream 0's token count (mixed experiments).
	var trigMu sync.Mutex
	triggers := map[int]chan struct{}{}
	for _, s := range e.Streams {
		if s.AtToken > 0 {
			triggers[s.AtToken] = make(chan struct{})
		}
	}
	onToken0 := func(n int) {
		trigMu.Lock()
		if ch, ok := triggers[n]; ok {
			close(ch)
			delete(triggers, n)
		}
		trigMu.Unlock()
	}
	t0 := timeNow()
	var wg sync.WaitGroup
	for si, s := range e.Streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(finished[si])
			res := &run.Results[si]
			if s.After >= 0 {
				select {
				case <-finished[s.After]:
				case <-ctx.Done():
					res.Err = ctx.Err().Error()
					return
				}
			}
			if s.AtToken > 0 {
				trigMu.Lock()
				ch := triggers[s.AtToken]
				trigMu.Unlock()
				if ch != nil {
					select {
					case <-ch:
					case <-finished[0]: // stream 0 ended early: send now
					case <-ctx.Done():
						res.Err = ctx.Err().Error()
						return
					}
				}
			}
			if wait := s.Offset - timeNow().Sub(t0); wait > 0 {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					res.Err = ctx.Err().Error()
					return
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				res.Err = ctx.Err().Error()
				return
			}
			var cb func(int)
			if si == 0 && len(triggers) > 0 {
				cb = onToken0
			}
			*res, _ = c.stream(ctx, texts[si], s.Output, t0, cb)
			<-sem
			progress()
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return run, err
	}
	return run, nil
}

// checkResults notices what the server did that the plan did not ask for:
// failed requests, rate limiting, outputs shorter than asked (ignore_eos
// ignored), prompts of another length than wanted.
func (m *Measurements) checkResults() {
	var failed, limited, short, off, total, stalls, gaps int
	var firstErr string
	for _, run := range m.Runs {
		e := m.Plan.Experiments[run.Experiment]
		for si, r := range run.Results {
			total++
			s := e.Streams[si]
			limited += r.RateLimited
			if r.Err != "" || r.Tokens() == 0 {
				failed++
				if firstErr == "" {
					firstErr = r.Err
				}
				continue
			}
			if n := max(r.CompletionTokens, r.Tokens()); n < s.Output {
				short++
			}
			if n := r.Tokens(); n > 2 {
				_, kept := trimmedGaps(r.TokenTimes, 0, n-1)
				gaps += n - 1
				stalls += n - 1 - len(kept)
			}
			if r.PromptTokens > 0 && abs(r.PromptTokens-s.Prompt) > max(2, s.Prompt/50) {
				off++
			}
		}
	}
	if stalls > 0 {
		m.warn(fmt.Sprintf("%d of %d inter-token gaps were stalls (over 3× their stream's median gap): a loaded client or server; left out of the fit and of the ITL columns", stalls, gaps))
	}
	if failed > 0 {
		m.warn(fmt.Sprintf("%d of %d requests failed (first: %s); their experiments are fitted without them", failed, total, firstErr))
	}
	if limited > 0 {
		m.warn(fmt.Sprintf("the server rate-limited %d times (HTTP 429); requests were retried after Retry-After", limited))
	}
	if short > 0 {
		m.warn(fmt.Sprintf("%d of %d requests ended before max_tokens (ignore_eos/min_tokens not honoured?); the fit simulates the lengths they had", short, total))
	}
	if off > 0 {
		m.warn(fmt.Sprintf("%d of %d prompts differ from the wanted length by more than 2%%; the fit simulates the lengths the server reported", off, total))
	}
}
