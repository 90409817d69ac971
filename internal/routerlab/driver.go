package routerlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/replay"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Options configure a run. The zero value of each field is its default.
type Options struct {
	// URL is the router's base URL (the driver posts to URL/v1/completions).
	URL string
	// Model is the model name sent; "" takes the fleet's (admin listing)
	// or the first of the router's GET /v1/models.
	Model  string
	APIKey string
	// Admin is the fleet's admin API base URL; "" runs without fleet
	// information (no load samples, no faults, no offline comparison).
	Admin    string
	AdminKey string
	// MaxInflight bounds the requests in flight and the connections
	// (default 256); an arrival beyond it waits, and its send time is what
	// the report and the offline replay use.
	MaxInflight int
	// TimeScale multiplies the workload's arrival times (default 1).
	TimeScale float64
	// Timeout bounds one request (default 10 minutes).
	Timeout time.Duration
	// SampleEvery is the interval of the workers' load samples (default
	// 500 ms).
	SampleEvery time.Duration
	// Faults is a schedule of admin actions (needs Admin).
	Faults []FaultStep
	// VocabSize maps the workload's token ids into [0, VocabSize) (id mod
	// VocabSize); 0 takes the fleet's, else the built-in tokenizer's.
	VocabSize int
	// Offline configures the offline replays of the same requests.
	Offline OfflineOptions
	// Progress, when set, receives a progress line a few times a second.
	Progress io.Writer
	// OnToken, when set, is called with the receive time of every token
	// chunk, from the request's goroutine (for measuring the driver itself;
	// it must be cheap and safe for concurrent use).
	OnToken func(time.Time)
}

// record is one request of the run.
type record struct {
	req       replay.Request
	prompt    []uint32 // as sent (mapped into the vocabulary, previous answer spliced in)
	done      chan struct{}
	res       result
	skipped   string // why the request was never sent
	sentAfter time.Duration
}

type driver struct {
	opts    Options
	client  *client
	start   time.Time
	vocab   uint32
	slots   chan struct{}
	records []*record
	wg      sync.WaitGroup

	sent, finished, failed, inflight atomic.Int64
}

// Run drives src through the router and builds the report. When ctx is
// cancelled (Ctrl-C), no more requests are sent, the ones in flight are
// cancelled and the report covers what happened so far (Interrupted).
func Run(ctx context.Context, src replay.Source, opts Options) (*Report, error) {
	if opts.URL == "" {
		return nil, errors.New("routerlab: no router URL")
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = 256
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if opts.TimeScale < 0 {
		return nil, fmt.Errorf("routerlab: time scale must be > 0, got %g", opts.TimeScale)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.SampleEvery <= 0 {
		opts.SampleEvery = 500 * time.Millisecond
	}
	if len(opts.Faults) > 0 && opts.Admin == "" {
		return nil, errors.New("routerlab: a fault schedule needs the fleet's admin API (--fleet-admin)")
	}
	var (
		adm  *admin
		info *fleetInfo
	)
	if opts.Admin != "" {
		adm = newAdmin(opts.Admin, opts.AdminKey)
		var err error
		if info, err = adm.describe(ctx); err != nil {
			return nil, fmt.Errorf("routerlab: %w", err)
		}
	}
	vocab := opts.VocabSize
	if vocab == 0 && info != nil {
		vocab = info.Engines[0].VocabSize
		for _, e := range info.Engines[1:] {
			vocab = min(vocab, e.VocabSize)
		}
	}
	if vocab == 0 {
		vocab = tokenizer.VocabSize
	}
	model := opts.Model
	if model == "" && info != nil {
		model = info.Workers[0].Model
	}
	if model == "" {
		var err error
		if model, err = firstModel(ctx, opts.URL, opts.APIKey); err != nil {
			return nil, fmt.Errorf("routerlab: no --model given and %w", err)
		}
	}

	d := &driver{opts: opts, vocab: uint32(vocab), slots: make(chan struct{}, opts.MaxInflight)}
	d.client = newClient(opts.URL, model, opts.APIKey, opts.MaxInflight, opts.Timeout)
	d.client.onToken = opts.OnToken
	defer d.client.close()

	runCtx, stopRun := context.WithCancel(context.Background())
	defer stopRun()
	d.start = time.Now()
	var smp *sampler
	var faultsDone chan struct{}
	var applied []AppliedFault
	var appliedMu sync.Mutex
	if info != nil {
		smp = newSampler(info.Workers, opts.SampleEvery)
		go smp.run(runCtx)
		if len(opts.Faults) > 0 {
			faultsDone = make(chan struct{})
			go func() {
				defer close(faultsDone)
				applyFaults(runCtx, adm, opts.Faults, d.start, func(a AppliedFault) {
					appliedMu.Lock()
					applied = append(applied, a)
					appliedMu.Unlock()
				})
			}()
		}
	}
	stopProgress := d.progress()

	// Requests are cancelled when the caller's context is: in-flight
	// streams end at once and count as cancelled.
	reqCtx, cancelReqs := context.WithCancel(context.Background())
	defer cancelReqs()
	stopWatch := context.AfterFunc(ctx, cancelReqs)
	defer stopWatch()
	srcErr := d.dispatch(ctx, reqCtx, src)
	d.wg.Wait()
	stopProgress()
	interrupted := ctx.Err() != nil
	// Faults scheduled past the last answer are still applied (a restart
	// after the trace ends is part of the script), unless interrupted.
	if faultsDone != nil {
		if interrupted {
			stopRun()
		}
		<-faultsDone
	}
	wall := time.Since(d.start)
	stopRun()
	var samples []WorkerSamples
	if smp != nil {
		samples = smp.result()
	}
	if srcErr != nil && !interrupted {
		return nil, srcErr
	}
	rep := d.report(info, samples, applied, wall, interrupted)
	if err := offlineCompare(rep, d.records, info, opts.Offline); err != nil {
		return nil, err
	}
	return rep, nil
}

// dispatch reads the workload and starts each request at its arrival.
func (d *driver) dispatch(ctx, reqCtx context.Context, src replay.Source) error {
	byIndex := map[int]*record{}
	for {
		req, err := src.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rec := &record{req: req, done: make(chan struct{})}
		rec.prompt = make([]uint32, len(req.Prompt))
		for i, t := range req.Prompt {
			rec.prompt[i] = t % d.vocab
		}
		d.records = append(d.records, rec)
		byIndex[req.Index] = rec
		at := d.start.Add(time.Duration(float64(req.Arrival) * d.opts.TimeScale))
		if wait := time.Until(at); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				d.skipRest(rec, "interrupted")
				return nil
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			d.skipRest(rec, "interrupted")
			return nil
		}
		var prev *record
		if req.Follows > 0 {
			prev = byIndex[req.Follows-1]
			delete(byIndex, req.Follows-1) // a turn has one successor
		}
		if prev == nil {
			// A first turn takes its slot here, so that the workload is
			// read no faster than the router answers.
			select {
			case d.slots <- struct{}{}:
			case <-ctx.Done():
				d.skipRest(rec, "interrupted")
				return nil
			}
		}
		d.wg.Add(1)
		go d.send(reqCtx, rec, prev)
	}
}

func (d *driver) skipRest(rec *record, why string) {
	rec.skipped = why
	close(rec.done)
}

// send waits for the previous turn (if any) and a slot, then sends.
func (d *driver) send(ctx context.Context, rec, prev *record) {
	defer d.wg.Done()
	defer close(rec.done)
	if prev != nil {
		select {
		case <-prev.done:
		case <-ctx.Done():
			rec.skipped = "interrupted"
			return
		}
		if prev.skipped != "" || prev.res.err != "" || len(prev.res.ids) != prev.req.OutputTokens {
			rec.skipped = "previous turn failed"
			d.failed.Add(1)
			return
		}
		// The turn includes the answer its session actually got.
		copy(rec.prompt[rec.req.FollowsOutputAt:], prev.res.ids)
		select {
		case d.slots <- struct{}{}:
		case <-ctx.Done():
			rec.skipped = "interrupted"
			return
		}
	}
	defer func() { <-d.slots }()
	d.sent.Add(1)
	d.inflight.Add(1)
	var body []byte
	// Every answer's token ids are kept: a later turn of the session is
	// read from the workload only after this one was sent, and must
	// include exactly what this one answered.
	rec.res = d.client.do(ctx, requestID(rec.req.Index), rec.prompt, rec.req.OutputTokens, true, &body)
	rec.sentAfter = rec.res.sent.Sub(d.start)
	d.inflight.Add(-1)
	d.finished.Add(1)
	if rec.res.err != "" {
		d.failed.Add(1)
	}
}

// progress draws a progress line until the returned function is called.
func (d *driver) progress() func() {
	if d.opts.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				d.drawProgress()
				fmt.Fprintln(d.opts.Progress)
				return
			case <-t.C:
				d.drawProgress()
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (d *driver) drawProgress() {
	fmt.Fprintf(d.opts.Progress, "\rtrace %6.1fs  sent %d  done %d  in flight %d  errors %d   ",
		time.Since(d.start).Seconds(), d.sent.Load(), d.finished.Load(), d.inflight.Load(), d.failed.Load())
}

// firstModel asks the router for its models and returns the first id.
func firstModel(ctx context.Context, base, key string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/models", nil)
	if err != nil {
		return "", err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", fmt.Errorf("GET /v1/models: %w", err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil || len(list.Data) == 0 {
		return "", fmt.Errorf("GET /v1/models (HTTP %d) named no model", resp.StatusCode)
	}
	return list.Data[0].ID, nil
}

// requestID is the X-Request-Id of the workload's request i.
func requestID(i int) string { return "lab-" + strconv.Itoa(i) }
