package loadgen

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options are a run's side channels.
type Options struct {
	// Progress, when set, receives a one-line progress bar (\r-updated)
	// every ProgressEvery (default 500 ms).
	Progress      io.Writer
	ProgressEvery time.Duration
}

// worker state: one connection, its own sample slices (merged at the end,
// no locks on the hot path).
type worker struct {
	id       int
	c        *conn
	ttft     []time.Duration
	e2e      []time.Duration
	itl      []time.Duration
	tokens   int64
	chunks   int64
	prompt   int64
	okN      int
	mismatch int
	errs     map[string]int
	last     time.Time
	rng      *rand.Rand
	mu       sync.Mutex // guards swapping c (the canceller reads it)
}

type runner struct {
	cfg    Config
	addr   string
	head   []byte // request line and fixed headers up to Content-Length
	words  []string
	issued atomic.Int64 // requests started
	done   atomic.Int64 // requests finished (ok or error)
	errN   atomic.Int64
	toks   atomic.Int64
	stop   atomic.Bool // no new requests
}

// Run executes a load test and returns its result. ctx cancellation stops
// new requests and aborts those in flight.
func Run(ctx context.Context, cfg Config, opts Options) (*Result, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, addr: cfg.hostPort(), words: vocabulary()}
	r.head = r.buildHead()

	// Open every connection before the clock starts (bounded parallelism).
	workers := make([]*worker, cfg.Concurrency)
	if err := r.dialAll(ctx, workers); err != nil {
		for _, w := range workers {
			if w != nil {
				w.c.close()
			}
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-ctx.Done()
		r.stop.Store(true)
		for _, w := range workers {
			// Unblock readers: an expired deadline fails their I/O.
			w.mu.Lock()
			if nc := w.c.nc; nc != nil {
				_ = nc.SetDeadline(time.Now())
			}
			w.mu.Unlock()
		}
	}()

	start := time.Now()
	var progDone chan struct{}
	if opts.Progress != nil {
		progDone = make(chan struct{})
		go r.progress(opts, start, progDone)
	}
	var wg sync.WaitGroup
	if cfg.Rate > 0 {
		arrivals := make(chan time.Time, 1<<16)
		for _, w := range workers {
			wg.Go(func() { r.openWorker(w, arrivals) })
		}
		r.dispatch(ctx, start, arrivals)
		close(arrivals)
	} else {
		if cfg.Duration > 0 {
			t := time.AfterFunc(cfg.Duration, func() { r.stop.Store(true) })
			defer t.Stop()
		}
		for _, w := range workers {
			delay := time.Duration(0)
			if cfg.Concurrency > 1 {
				delay = cfg.Ramp * time.Duration(w.id) / time.Duration(cfg.Concurrency)
			}
			wg.Go(func() { r.closedWorker(w, start.Add(delay)) })
		}
	}
	wg.Wait()
	end := start
	for _, w := range workers {
		if w.last.After(end) {
			end = w.last
		}
		w.drop()
	}
	if progDone != nil {
		close(progDone)
		fmt.Fprintln(opts.Progress)
	}
	res := r.merge(workers, end.Sub(start))
	return res, nil
}

func (r *runner) dialAll(ctx context.Context, workers []*worker) error {
	const par = 64
	sem := make(chan struct{}, par)
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for i := range workers {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, err := dial(r.addr, 10*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = fmt.Errorf("pre-dial connection %d to %s: %w", i, r.addr, err)
				}
				return
			}
			workers[i] = &worker{id: i, c: c, errs: map[string]int{},
				rng: rand.New(rand.NewPCG(uint64(r.cfg.Seed), uint64(i)+1))}
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return first
}

// closedWorker keeps one request in flight until the bounds are reached.
func (r *runner) closedWorker(w *worker, first time.Time) {
	if d := time.Until(first); d > 0 {
		time.Sleep(d)
	}
	for r.claim() {
		r.one(w, time.Now())
	}
}

// openWorker serves scheduled arrivals; latency counts from the arrival.
func (r *runner) openWorker(w *worker, arrivals <-chan time.Time) {
	for at := range arrivals {
		if r.stop.Load() && time.Now().After(at.Add(time.Second)) {
			continue // aborted run: drain
		}
		r.one(w, at)
	}
}

// dispatch generates Poisson arrivals until the bounds are reached.
func (r *runner) dispatch(ctx context.Context, start time.Time, out chan<- time.Time) {
	rng := rand.New(rand.NewPCG(uint64(r.cfg.Seed), 0x5eed))
	next := start
	for r.claim() {
		if r.cfg.Duration > 0 && next.Sub(start) >= r.cfg.Duration {
			r.issued.Add(-1)
			return
		}
		if d := time.Until(next); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				r.issued.Add(-1)
				return
			}
		}
		out <- next
		next = next.Add(time.Duration(rng.ExpFloat64() / r.cfg.Rate * float64(time.Second)))
	}
}

// claim reserves one request against the bounds.
func (r *runner) claim() bool {
	if r.stop.Load() {
		return false
	}
	n := r.issued.Add(1)
	if r.cfg.Requests > 0 && n > int64(r.cfg.Requests) {
		r.issued.Add(-1)
		return false
	}
	return true
}

// one runs a request on the worker's connection, redialing a connection the
// server closed while idle (one retry before any response byte).
func (r *runner) one(w *worker, start time.Time) {
	r.buildRequest(w)
	deadline := start.Add(r.cfg.Timeout)
	var o outcome
	var err error
	for attempt := 0; ; attempt++ {
		if w.c.nc == nil {
			var c *conn
			if c, err = dial(r.addr, 10*time.Second); err != nil {
				break
			}
			c.wbuf, c.scratch = w.c.wbuf, w.c.scratch
			w.mu.Lock()
			w.c = c
			w.mu.Unlock()
		}
		wasFresh := w.c.fresh
		w.c.fresh = false
		o, err = w.c.do(start, deadline, !r.cfg.NoStream, &w.itl)
		if err == nil || o.sentAny || attempt > 0 || !wasFresh {
			break
		}
		w.drop()
	}
	w.last = time.Now()
	r.done.Add(1)
	if err != nil {
		r.errN.Add(1)
		w.errs[errKind(err)]++
		w.drop()
		return
	}
	if !o.keepAlive {
		w.drop()
	} else {
		w.c.fresh = true // an idle keep-alive connection may be closed by the server
	}
	w.okN++
	w.ttft = append(w.ttft, o.ttft)
	w.e2e = append(w.e2e, o.e2e)
	w.tokens += int64(o.tokens)
	w.chunks += int64(o.chunks)
	if o.promptTokens > 0 {
		w.prompt += int64(o.promptTokens)
	}
	if r.cfg.IgnoreEOS && o.tokens != r.cfg.MaxTokens {
		w.mismatch++
	}
	r.toks.Add(int64(o.tokens))
}

// drop closes the worker's connection; the next request redials.
func (w *worker) drop() {
	w.mu.Lock()
	w.c.close()
	w.c.nc = nil
	w.mu.Unlock()
}

// buildHead renders the request line and the fixed headers.
func (r *runner) buildHead() []byte {
	var b []byte
	b = append(b, "POST "...)
	b = append(b, r.cfg.endpointPath()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, r.addr...)
	b = append(b, "\r\nUser-Agent: mocker-bench\r\nContent-Type: application/json\r\n"...)
	if !r.cfg.NoStream {
		b = append(b, "Accept: text/event-stream\r\n"...)
	}
	if r.cfg.APIKey != "" {
		b = append(b, "Authorization: Bearer "...)
		b = append(b, r.cfg.APIKey...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Content-Length: "...)
	return b
}

// buildRequest renders a fresh request (a new prompt) into w.c.wbuf,
// reusing its storage.
func (r *runner) buildRequest(w *worker) {
	cfg := &r.cfg
	if w.c == nil {
		w.c = &conn{}
	}
	// The body goes after the head; render it first into the tail of the
	// buffer, then prepend head + length.
	body := w.c.scratch[:0]
	body = append(body, `{"model":`...)
	body = strconv.AppendQuote(body, cfg.Model)
	if cfg.Chat {
		body = append(body, `,"messages":[{"role":"user","content":"`...)
	} else {
		body = append(body, `,"prompt":"`...)
	}
	words := 0
	if cfg.SharedPrefix > 0 {
		g := w.rng.IntN(cfg.NumPrefixes)
		prng := rand.New(rand.NewPCG(uint64(cfg.Seed)^0xabcdef, uint64(g)))
		for ; words < cfg.SharedPrefix; words++ {
			body = r.appendWord(body, prng, words)
		}
	}
	for ; words < cfg.PromptTokens; words++ {
		body = r.appendWord(body, w.rng, words)
	}
	if cfg.Chat {
		body = append(body, `"}]`...)
	} else {
		body = append(body, '"')
	}
	body = append(body, `,"max_tokens":`...)
	body = strconv.AppendInt(body, int64(cfg.MaxTokens), 10)
	if cfg.IgnoreEOS {
		body = append(body, `,"ignore_eos":true`...)
	}
	if cfg.NoStream {
		body = append(body, `,"stream":false}`...)
	} else {
		body = append(body, `,"stream":true,"stream_options":{"include_usage":true}}`...)
	}
	b := append(w.c.wbuf[:0], r.head...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	w.c.wbuf = b
	w.c.scratch = body
}

func (r *runner) appendWord(b []byte, rng *rand.Rand, i int) []byte {
	if i > 0 {
		b = append(b, ' ')
	}
	return append(b, r.words[rng.IntN(len(r.words))]...)
}

// vocabulary is a fixed list of plain lowercase words (JSON-safe).
func vocabulary() []string {
	return strings.Fields(`the of and to in is was he for it with as his on be at by had are but from
		or have an they which one you were her all she there would their we him been has when who will
		more no if out so said what up its about into than them can only other new some could time these
		two may then do first any my now such like our over man me even most made after also did many
		before must through back years where much your way well down should because each just those
		people how too little state good very make world still own see men work long get here between
		both life being under never day same another know while last might us great old year off come
		since against go came right used take three`)
}

// progress prints a bar until done is closed.
func (r *runner) progress(opts Options, start time.Time, done <-chan struct{}) {
	every := opts.ProgressEvery
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		el := time.Since(start)
		frac := 0.0
		if r.cfg.Duration > 0 {
			frac = el.Seconds() / r.cfg.Duration.Seconds()
		}
		if r.cfg.Requests > 0 {
			frac = max(frac, float64(r.done.Load())/float64(r.cfg.Requests))
		}
		frac = min(frac, 1)
		const width = 30
		n := int(frac * width)
		bar := strings.Repeat("=", n) + strings.Repeat(" ", width-n)
		fmt.Fprintf(opts.Progress, "\r[%s] %3.0f%% %6.1fs  done %d  in flight %d  errors %d  %.0f tok/s   ",
			bar, frac*100, el.Seconds(), r.done.Load(), r.issued.Load()-r.done.Load(), r.errN.Load(),
			float64(r.toks.Load())/el.Seconds())
	}
}

// merge combines the workers' samples into the result.
func (r *runner) merge(workers []*worker, wall time.Duration) *Result {
	res := &Result{Config: r.cfg, WallSeconds: wall.Seconds(), ErrorKinds: map[string]int{}}
	var ttft, e2e, itl []time.Duration
	for _, w := range workers {
		ttft = append(ttft, w.ttft...)
		e2e = append(e2e, w.e2e...)
		itl = append(itl, w.itl...)
		res.Requests += w.okN
		res.OutputTokens += w.tokens
		res.TokenChunks += w.chunks
		res.MismatchedLengths += w.mismatch
		res.PromptTokensMean += float64(w.prompt)
		for k, v := range w.errs {
			res.ErrorKinds[k] += v
			res.Errors += v
		}
	}
	if res.Requests > 0 {
		res.PromptTokensMean /= float64(res.Requests)
	}
	if len(res.ErrorKinds) == 0 {
		res.ErrorKinds = nil
	}
	if s := wall.Seconds(); s > 0 {
		res.RequestsPerSecond = float64(res.Requests) / s
		res.OutputTokensPerSec = float64(res.OutputTokens) / s
	}
	res.TTFT = Summarize(ttft)
	res.E2E = Summarize(e2e)
	res.ITL = Summarize(itl)
	return res
}
