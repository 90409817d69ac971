package routerlab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/fleet"
	"github.com/mocker-server/mocker-server/internal/replay"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// labFleet is an in-process fleet with its admin API, as `mocker-server
// fleet` runs it.
type labFleet struct {
	f     *fleet.Fleet
	admin string
	urls  []string
}

// startFleet starts n workers configured by overlay (serve flag keys) on
// ports the OS picks, with the admin API on a free port.
func startFleet(t *testing.T, n int, overlay map[string]any) *labFleet {
	t.Helper()
	for k, v := range overlay {
		switch v.(type) {
		case int, float64:
			overlay[k] = json.Number(fmt.Sprint(v)) // as flags and files give numbers
		}
	}
	// Worker ports below the ephemeral range: the kill/restart test
	// restarts a worker on its port, which another process's outgoing
	// connection must not take meanwhile.
	members, _, err := fleet.Plan(fleet.Spec{Workers: n, BasePort: testutil.RestartablePortRun(t, n), Base: config.LoadOptions{Overlay: overlay,
		LookupEnv: func(string) (string, bool) { return "", false },
		Hostname:  func() (string, error) { return "labhost", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	adminURL := make(chan string, 1)
	f, err := fleet.Start(context.Background(), members, fleet.Options{AdminAddr: "127.0.0.1:0",
		AdminReady: func(u string) { adminURL <- u }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	lf := &labFleet{f: f, admin: <-adminURL}
	for i := range members {
		lf.urls = append(lf.urls, f.Worker(i).URL())
	}
	return lf
}

// rrProxy is the trivial router of the tests: request i goes to upstream
// i mod n, whatever the upstream's state; an upstream that does not answer
// gets the proxy's own 502 (no worker header). It counts, per upstream,
// the requests it could not deliver.
type rrProxy struct {
	url    string
	failed []atomic.Int64
	conns  atomic.Int64 // client connections accepted
	mu     sync.Mutex
	order  []string // X-Request-Id of each /v1/completions, in the order upstreams were picked
	// stripWorker makes the proxy drop the x-mocker-worker header, as a
	// router that forwards only known headers does; stripped counts them.
	stripWorker atomic.Bool
	stripped    atomic.Int64
}

// pickedOrder returns the request ids in the order the proxy routed them.
func (p *rrProxy) pickedOrder() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.order)
}

func roundRobinProxy(t *testing.T, upstreams []string) *rrProxy {
	t.Helper()
	var targets []*url.URL
	for _, u := range upstreams {
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, p)
	}
	p := &rrProxy{failed: make([]atomic.Int64, len(targets))}
	var next atomic.Uint64
	type upstreamKey struct{}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			if pr.In.URL.Path != "/v1/completions" {
				pr.SetURL(targets[0]) // model listing and the like
				return
			}
			p.mu.Lock()
			i := int(next.Add(1)-1) % len(targets)
			p.order = append(p.order, pr.In.Header.Get("X-Request-Id"))
			p.mu.Unlock()
			pr.Out = pr.Out.WithContext(context.WithValue(pr.Out.Context(), upstreamKey{}, i))
			pr.SetURL(targets[i])
		},
		FlushInterval: -1, // stream every chunk at once
		ModifyResponse: func(resp *http.Response) error {
			if p.stripWorker.Load() && resp.Header.Get(HeaderWorker) != "" {
				resp.Header.Del(HeaderWorker)
				p.stripped.Add(1)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if i, ok := r.Context().Value(upstreamKey{}).(int); ok {
				p.failed[i].Add(1)
			}
			http.Error(w, "proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	// The request body is read whole before it is forwarded: net/http's
	// server cannot read an inbound body once the response has begun, and
	// the transport's final read of a streamed body would then tear the
	// upstream connection down mid-answer (golang/go#40747).
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			p.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// traceSlice writes the first n requests of a committed trace (testdata/:
// the Mooncake sample or the shared-prefix trace, see testdata/README.md)
// whose arrivals are at least minGapMs apart, with outputs capped at
// maxOut tokens and prompts shrunk 8×: each hash id stands for
// sliceBlockSize = 64 tokens instead of 512 and the unique tail is an
// eighth as long, so the sharing structure is the trace's while a test run
// is short. The gap keeps the order in which a proxy sees requests their
// send order.
func traceSlice(t *testing.T, file string, n int, minGapMs float64, maxOut int) string {
	t.Helper()
	in, err := os.Open("../../testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(t.TempDir(), "slice.jsonl")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	last, kept := -1e18, 0
	for sc.Scan() && kept < n {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		ts := line["timestamp"].(float64)
		if ts-last < minGapMs {
			continue
		}
		last = ts
		ids := float64(len(line["hash_ids"].([]any)))
		tail := max(0, line["input_length"].(float64)-512*ids)
		line["input_length"] = ids*sliceBlockSize + math.Ceil(tail/8)
		line["output_length"] = min(line["output_length"].(float64), float64(maxOut))
		b, _ := json.Marshal(line)
		fmt.Fprintf(out, "%s\n", b)
		kept++
	}
	return path
}

// sliceBlockSize is the tokens per hash id of a traceSlice.
const sliceBlockSize = 64

// openSlice opens a traceSlice as a replay source.
func openSlice(t *testing.T, path string) replay.Source {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	src, err := replay.NewMooncakeSource(bufio.NewReader(file), path, replay.TraceOptions{BlockSize: sliceBlockSize})
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// reportText renders the terminal report.
func reportText(t *testing.T, rep *Report) string {
	t.Helper()
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func itoa(i int) string { return fmt.Sprint(i) }
