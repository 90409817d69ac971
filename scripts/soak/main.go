// Command soak drives a running mocker-server with mixed traffic for a long
// time and checks that it does not grow: concurrent streams (some cut off
// at a random point), injected faults (the server's --failure-rate), a KV
// event subscriber that reads one message a second, and a client that
// stops reading its stream. Every interval it samples the server's RSS,
// goroutines, open file descriptors, /load and KV cache usage; at the end
// it stops the traffic, lets the server settle and fails (exit 1) on
// growth. scripts/soak.sh starts the server and runs it.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pebbe/zmq4"
)

type options struct {
	url         string
	pid         int
	kvEndpoint  string
	duration    time.Duration
	concurrency int
	interval    time.Duration
	seed        uint64
}

// tally counts what the clients saw.
type tally struct {
	requests, completed, disconnected, faulted, failed atomic.Int64
	kvMessages                                         atomic.Int64
}

// sample is one observation of the server process.
type sample struct {
	at         time.Duration
	rssKB      int64
	goroutines int64
	fds        int64
	load       int64
	kvUsage    float64
}

func main() {
	var o options
	flag.StringVar(&o.url, "url", "http://127.0.0.1:8000", "server base URL")
	flag.IntVar(&o.pid, "pid", 0, "server process id (for RSS and fds)")
	flag.StringVar(&o.kvEndpoint, "kv", "", "KV event PUB endpoint for the slow subscriber (empty = none)")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "traffic duration")
	flag.IntVar(&o.concurrency, "concurrency", 1000, "concurrent streams")
	flag.DurationVar(&o.interval, "interval", 10*time.Second, "sampling interval")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the traffic mix")
	flag.Parse()
	if o.pid == 0 {
		fmt.Fprintln(os.Stderr, "soak: -pid is required")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "soak: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("soak: PASS")
}

func run(o options) error {
	ctx, stop := context.WithTimeout(context.Background(), o.duration)
	defer stop()
	var t tally
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.concurrency, MaxConnsPerHost: 0}}

	base, err := take(o)
	if err != nil {
		return err
	}
	samples := []sample{base}
	printSample(base, &t)

	var wg sync.WaitGroup
	for w := range o.concurrency {
		wg.Go(func() { streamLoop(ctx, client, o.url, rand.New(rand.NewPCG(o.seed, uint64(w))), &t) })
		if w%50 == 49 {
			time.Sleep(20 * time.Millisecond) // ramp up instead of one burst
		}
	}
	if o.kvEndpoint != "" {
		wg.Go(func() { slowSubscriber(ctx, o.kvEndpoint, &t) })
	}
	wg.Go(func() { stuckReaders(ctx, o.url) })

	start := time.Now()
	tick := time.NewTicker(o.interval)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			s, err := take(o)
			if err != nil {
				return err
			}
			s.at = time.Since(start)
			samples = append(samples, s)
			printSample(s, &t)
		}
	}
	tick.Stop()
	wg.Wait()
	client.CloseIdleConnections()

	// Settle: the server must return to idle (no load, no KV in use), and
	// its goroutines and descriptors to near the baseline. Stuck-reader
	// connections end by the server's 60 s write deadline.
	var final sample
	deadline := time.Now().Add(90 * time.Second)
	for {
		final, err = take(o)
		if err != nil {
			return err
		}
		final.at = time.Since(start)
		if final.load == 0 && final.kvUsage == 0 && final.goroutines <= base.goroutines+20 && final.fds <= base.fds+20 {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	printSample(final, &t)
	fmt.Printf("soak: requests %d completed %d disconnected %d faulted %d failed %d kv_messages_read %d\n",
		t.requests.Load(), t.completed.Load(), t.disconnected.Load(), t.faulted.Load(), t.failed.Load(), t.kvMessages.Load())
	return judge(base, samples, final, &t)
}

// judge fails on growth: after the settle, /load and KV usage are 0 and
// goroutines and fds are within 20 of the baseline; under load, the RSS of
// the last third of the run exceeds that of the first third (after the
// first minute's warm-up) by no more than 25 %.
func judge(base sample, samples []sample, final sample, t *tally) error {
	var errs []error
	if final.load != 0 || final.kvUsage != 0 {
		errs = append(errs, fmt.Errorf("not idle after the traffic: load %d, KV usage %.4f", final.load, final.kvUsage))
	}
	if final.goroutines > base.goroutines+20 {
		errs = append(errs, fmt.Errorf("goroutines %d at the end, %d at the start", final.goroutines, base.goroutines))
	}
	if final.fds > base.fds+20 {
		errs = append(errs, fmt.Errorf("open fds %d at the end, %d at the start", final.fds, base.fds))
	}
	var warm []sample
	for _, s := range samples[1:] {
		if s.at >= time.Minute {
			warm = append(warm, s)
		}
	}
	if n := len(warm) / 3; n > 0 {
		early, late := maxRSS(warm[:n]), maxRSS(warm[len(warm)-n:])
		if float64(late) > 1.25*float64(early) {
			errs = append(errs, fmt.Errorf("RSS grew under steady load: %d kB early, %d kB late", early, late))
		}
	}
	if t.completed.Load() == 0 || t.faulted.Load() == 0 || t.disconnected.Load() == 0 {
		errs = append(errs, fmt.Errorf("the traffic mix did not happen (completed %d, faulted %d, disconnected %d)",
			t.completed.Load(), t.faulted.Load(), t.disconnected.Load()))
	}
	return errors.Join(errs...)
}

func maxRSS(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.rssKB)
	}
	return m
}

func printSample(s sample, t *tally) {
	fmt.Printf("t=%4.0fs rss=%7d kB goroutines=%6d fds=%5d load=%5d kv_usage=%.4f requests=%d\n",
		s.at.Seconds(), s.rssKB, s.goroutines, s.fds, s.load, s.kvUsage, t.requests.Load())
}

// streamLoop sends streaming chat requests back to back. One in ten is cut
// off after a random number of events.
func streamLoop(ctx context.Context, client *http.Client, url string, rng *rand.Rand, t *tally) {
	for ctx.Err() == nil {
		maxTokens := 16 + rng.IntN(200)
		cutAfter := -1
		if rng.IntN(10) == 0 {
			cutAfter = rng.IntN(maxTokens)
		}
		path, body := soakRequest(rng, maxTokens)
		rctx, cancel := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(rctx, "POST", url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		t.requests.Add(1)
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				t.failed.Add(1)
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		outcome := readStream(resp, cutAfter)
		cancel()
		resp.Body.Close()
		if ctx.Err() != nil {
			return // the run ended mid-request: not an outcome
		}
		switch outcome {
		case "done":
			t.completed.Add(1)
		case "cut":
			t.disconnected.Add(1)
		case "fault":
			t.faulted.Add(1)
		default:
			t.failed.Add(1)
		}
	}
}

// soakRequest picks one request of the mixed traffic: mostly streamed chat,
// and the other surfaces the server carries through the same pipeline —
// a chat constrained by a JSON schema, the Responses and Anthropic Messages
// streams, and embeddings (not streamed).
func soakRequest(rng *rand.Rand, maxTokens int) (path, body string) {
	n := rng.IntN(1000)
	switch rng.IntN(10) {
	case 0:
		return "/v1/responses", fmt.Sprintf(`{"input":"soak %d","max_output_tokens":%d,"stream":true}`, n, maxTokens)
	case 1:
		return "/v1/messages", fmt.Sprintf(`{"model":"mocker-model","messages":[{"role":"user","content":"soak %d"}],"max_tokens":%d,"stream":true}`, n, maxTokens)
	case 2:
		return "/v1/embeddings", fmt.Sprintf(`{"input":["soak %d","soak %d"]}`, n, n+1)
	case 3:
		return "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"soak %d"}],"max_tokens":%d,"stream":true,`+
			`"response_format":{"type":"json_schema","json_schema":{"name":"s","schema":{"type":"object","properties":{"n":{"type":"integer"},"s":{"enum":["a","b","c"]}},"required":["n","s"]}}}}`,
			n, maxTokens)
	}
	return "/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"soak %d"}],"max_tokens":%d,"stream":true}`, n, maxTokens)
}

// readStream reads a response: "done" ([DONE] after tokens), "cut" (we
// left), "fault" (an error status, error event, or a stream that ended
// without [DONE]: the server's injected faults) or "error".
func readStream(resp *http.Response, cutAfter int) string {
	if resp.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return "fault"
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// Not streamed (embeddings): whole when the JSON body is.
		var v map[string]any
		if json.NewDecoder(resp.Body).Decode(&v) != nil {
			return "fault"
		}
		return "done"
	}
	br := bufio.NewReader(resp.Body)
	events := 0
	sawError := false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "fault" // truncate, reset
		}
		if !strings.HasPrefix(string(line), "data: ") {
			continue
		}
		// The end of a stream: chat's [DONE], the Responses API's
		// response.completed (or incomplete), Anthropic's message_stop.
		if strings.HasPrefix(string(line), "data: [DONE]") ||
			strings.Contains(string(line), `"type":"response.completed"`) ||
			strings.Contains(string(line), `"type":"response.incomplete"`) ||
			strings.Contains(string(line), `"type":"message_stop"`) {
			if sawError {
				return "fault"
			}
			return "done"
		}
		if strings.HasPrefix(string(line), `data: {"error"`) || strings.Contains(string(line), `"type":"error"`) ||
			strings.Contains(string(line), `"type":"response.failed"`) {
			sawError = true
		}
		events++
		if events == cutAfter {
			return "cut"
		}
	}
}

// slowSubscriber reads one KV event batch a second with a small receive
// high-water mark, so that the publisher's queue for it stays full.
func slowSubscriber(ctx context.Context, endpoint string, t *tally) {
	sub, err := zmq4.NewSocket(zmq4.SUB)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak: zmq:", err)
		return
	}
	defer sub.Close()
	_ = sub.SetRcvhwm(10)
	_ = sub.SetRcvtimeo(500 * time.Millisecond)
	_ = sub.SetLinger(0)
	if err := sub.Connect(endpoint); err != nil {
		fmt.Fprintln(os.Stderr, "soak: zmq connect:", err)
		return
	}
	_ = sub.SetSubscribe("")
	for ctx.Err() == nil {
		if _, err := sub.RecvMessageBytes(0); err == nil {
			t.kvMessages.Add(1)
		}
		time.Sleep(time.Second)
	}
}

// stuckReaders keeps one client that requests a long stream and never
// reads it, with a tiny receive window; a new one every 70 s (the server
// closes a stuck connection at its 60 s write deadline).
func stuckReaders(ctx context.Context, url string) {
	addr := strings.TrimPrefix(url, "http://")
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return
		}
		// ignore_eos: the stream must run long enough to fill the
		// socket, not end at its natural length.
		body := `{"messages":[{"role":"user","content":"stuck"}],"max_tokens":30000,"ignore_eos":true,"stream":true,"logprobs":true,"top_logprobs":20}`
		fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		select {
		case <-ctx.Done():
		case <-time.After(70 * time.Second):
		}
		c.Close()
	}
}

// take samples the server process and its endpoints.
func take(o options) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", o.pid))
	if err != nil {
		return s, fmt.Errorf("server process: %w", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			s.rssKB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", o.pid))
	if err != nil {
		return s, err
	}
	s.fds = int64(len(fds))
	c := &http.Client{Timeout: 10 * time.Second}
	if b, err := get(c, o.url+"/load"); err == nil {
		s.load, _ = strconv.ParseInt(strings.Trim(strings.TrimPrefix(string(b), `{"server_load":`), "}"), 10, 64)
	} else {
		return s, err
	}
	b, err := get(c, o.url+"/metrics")
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "go_goroutines "):
			s.goroutines, _ = strconv.ParseInt(strings.Fields(line)[1], 10, 64)
		case strings.HasPrefix(line, "vllm:kv_cache_usage_perc{"):
			f := strings.Fields(line)
			s.kvUsage, _ = strconv.ParseFloat(f[len(f)-1], 64)
		}
	}
	return s, nil
}

func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
