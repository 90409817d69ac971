package routerlab

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxSamples bounds each worker's sampled series: past it, neighbouring
// samples are merged (their peaks kept) and the interval doubles, so a long
// run costs a fixed amount of memory.
const maxSamples = 1200

// WorkerSamples are one worker's sampled gauges over the run: the peak KV
// usage over its DP ranks and the summed running and waiting requests, read
// from its /metrics (vLLM's names) every IntervalS seconds of the run.
type WorkerSamples struct {
	Worker    string    `json:"worker"`
	IntervalS float64   `json:"interval_s"`
	KVUsage   []float64 `json:"kv_usage"`
	Running   []float64 `json:"running"`
	Waiting   []float64 `json:"waiting"`
	// Failed counts scrapes that got no answer (a killed worker).
	Failed int `json:"failed_scrapes"`
}

// sampler scrapes every worker's /metrics on a ticker until stopped.
type sampler struct {
	http    *http.Client
	urls    []string
	every   time.Duration
	mu      sync.Mutex
	series  []WorkerSamples
	scrapes []int // raw scrapes so far, per worker
	stride  []int // raw scrapes per point, per worker
	stopped chan struct{}
}

func newSampler(workers []workerInfo, every time.Duration) *sampler {
	// A scrape may take longer than the interval on a busy machine; the
	// next tick then waits for it rather than counting a live worker as
	// failed.
	s := &sampler{http: &http.Client{Timeout: max(every, 2*time.Second)}, every: every, stopped: make(chan struct{})}
	for _, w := range workers {
		s.urls = append(s.urls, strings.TrimRight(w.URL, "/")+"/metrics")
		s.series = append(s.series, WorkerSamples{Worker: w.ID, IntervalS: every.Seconds()})
	}
	s.scrapes = make([]int, len(workers))
	s.stride = make([]int, len(workers))
	for i := range s.stride {
		s.stride[i] = 1
	}
	return s
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context) {
	defer close(s.stopped)
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		var wg sync.WaitGroup
		for i := range s.urls {
			wg.Go(func() { s.scrape(ctx, i) })
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (s *sampler) scrape(ctx context.Context, i int) {
	kv, running, waiting, ok := s.read(ctx, s.urls[i])
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &s.series[i]
	if !ok {
		w.Failed++
		kv, running, waiting = 0, 0, 0
	}
	// Point j holds raw scrapes [j·stride, (j+1)·stride): their peak.
	j := s.scrapes[i] / s.stride[i]
	s.scrapes[i]++
	if j < len(w.KVUsage) {
		w.KVUsage[j] = max(w.KVUsage[j], kv)
		w.Running[j] = max(w.Running[j], running)
		w.Waiting[j] = max(w.Waiting[j], waiting)
		return
	}
	w.KVUsage = append(w.KVUsage, kv)
	w.Running = append(w.Running, running)
	w.Waiting = append(w.Waiting, waiting)
	if len(w.KVUsage) > maxSamples {
		w.KVUsage, w.Running, w.Waiting = halve(w.KVUsage), halve(w.Running), halve(w.Waiting)
		w.IntervalS *= 2
		s.stride[i] *= 2
	}
}

// halve merges neighbouring samples, keeping each pair's peak.
func halve(v []float64) []float64 {
	out := v[:0]
	for i := 0; i < len(v); i += 2 {
		m := v[i]
		if i+1 < len(v) {
			m = max(m, v[i+1])
		}
		out = append(out, m)
	}
	return out
}

// read scrapes one worker: peak KV usage over its ranks, summed running
// and waiting requests.
func (s *sampler) read(ctx context.Context, url string) (kv, running, waiting float64, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, 0, false
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, 0, 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var dst *float64
		sum := true
		switch {
		case bytes.HasPrefix(line, []byte("vllm:kv_cache_usage_perc{")):
			dst, sum = &kv, false
		case bytes.HasPrefix(line, []byte("vllm:num_requests_running{")):
			dst = &running
		case bytes.HasPrefix(line, []byte("vllm:num_requests_waiting{")):
			dst = &waiting
		default:
			continue
		}
		sp := bytes.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(string(line[sp+1:]), 64)
		if sp < 0 || err != nil {
			continue
		}
		if sum {
			*dst += v
		} else {
			*dst = max(*dst, v)
		}
	}
	return kv, running, waiting, sc.Err() == nil
}

// result returns the series after the sampler stopped.
func (s *sampler) result() []WorkerSamples {
	<-s.stopped
	return s.series
}
