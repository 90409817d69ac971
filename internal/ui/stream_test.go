package ui

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

func TestStream_BadQueryAnswers400JSON(t *testing.T) {
	srv := httptest.NewServer(Handler(NewHub(Options{}), HandlerOptions{}))
	defer srv.Close()
	for _, tc := range []struct{ query, param string }{
		{"view=fleet", "view"},
		{"rate=0", "rate"},
		{"rate=11", "rate"},
		{"rate=fast", "rate"},
		{"worker=3", "worker"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			res, err := http.Get(srv.URL + "/ui/stream?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body struct {
				Error struct {
					Param string `json:"param"`
					Code  int    `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != 400 || res.Header.Get("Content-Type") != "application/json" ||
				body.Error.Param != tc.param || body.Error.Code != 400 {
				t.Errorf("%d %s %+v; want 400 JSON naming %s", res.StatusCode, res.Header.Get("Content-Type"), body, tc.param)
			}
		})
	}
}

func TestPages_UnknownPathsAnswerThe404Page(t *testing.T) {
	hub := NewHub(Options{Name: "w0"})
	fleet := NewFleet([]FleetWorker{{ID: "w0", Hub: hub, Status: func() WorkerStatus { return WorkerStatus{State: "running"} }}})
	for _, tc := range []struct {
		name string
		h    http.Handler
		path string
		want int
	}{
		{"worker page", Handler(hub, HandlerOptions{}), "/ui", 200},
		{"unknown worker path", Handler(hub, HandlerOptions{}), "/ui/nothing", 404},
		{"fleet page", FleetHandler(fleet, nil), "/ui", 200},
		{"known worker", FleetHandler(fleet, nil), "/ui/worker/w0", 200},
		{"unknown worker", FleetHandler(fleet, nil), "/ui/worker/w9", 404},
		{"asset", FleetHandler(fleet, nil), "/ui/assets/uPlot.iife.min.js", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
			if rec.Code != tc.want {
				t.Errorf("GET %s: %d, want %d", tc.path, rec.Code, tc.want)
			}
			if tc.want == 404 && !strings.Contains(rec.Body.String(), `id="message"`) {
				t.Errorf("GET %s: not the 404 page: %.200s", tc.path, rec.Body.String())
			}
		})
	}
}

func TestAuth_APIKeyByHeaderOrCookie(t *testing.T) {
	srv := httptest.NewServer(Handler(NewHub(Options{}), HandlerOptions{APIKeys: []string{"k1"}}))
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(path string, mutate func(*http.Request)) *http.Response {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if mutate != nil {
			mutate(req)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if res := get("/ui", nil); res.StatusCode != 401 {
		t.Errorf("no key: %d, want 401", res.StatusCode)
	}
	if res := get("/ui?key=wrong", nil); res.StatusCode != 401 {
		t.Errorf("wrong key: %d, want 401", res.StatusCode)
	}
	if res := get("/ui/api/block?rank=0&block=0", func(r *http.Request) { r.Header.Set("Authorization", "Bearer k1") }); res.StatusCode != 400 {
		t.Errorf("bearer key, no rank yet: %d, want 400", res.StatusCode)
	}
	res := get("/ui?key=k1", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/ui" || len(res.Cookies()) != 1 {
		t.Fatalf("?key=: %d to %q with %d cookies; want 303 to /ui with the cookie", res.StatusCode, res.Header.Get("Location"), len(res.Cookies()))
	}
	cookie := res.Cookies()[0]
	if res := get("/ui", func(r *http.Request) { r.AddCookie(cookie) }); res.StatusCode != 200 {
		t.Errorf("cookie: %d, want 200", res.StatusCode)
	}
}

// A viewer that stops reading fills the socket buffers; the next write
// blocks for StallTimeout and the stream ends, releasing the viewer.
func TestStream_StuckViewerIsDisconnectedAndReleased(t *testing.T) {
	hub := NewHub(Options{StallTimeout: 300 * time.Millisecond})
	s := newSimulated(t, hub, 64)
	// 300 requests with 2 kB ids make each update ~600 kB: the socket
	// buffers fill within a few updates.
	for i := range 300 {
		s.submit(0, strings.Repeat("x", 2000)+strconv.Itoa(i), 16, 1)
	}
	s.run()
	srv := httptest.NewUnstartedServer(Handler(hub, HandlerOptions{}))
	var closed atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateClosed {
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := io.WriteString(conn, "GET /ui/stream HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "the viewer to connect", func() bool { return hub.Viewers() == 1 })
	// Keep the engine changing so every tick has a new update to send.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			s.submit(s.sim.Now(), "cmpl-x", 16, 1)
			s.sim.Run(0)
			s.core.InspectState(s.sim.Clock.Now())
			time.Sleep(20 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-done }()
	testutil.WaitFor(t, 30*time.Second, "the stuck viewer to be dropped", func() bool { return hub.Viewers() == 0 })

	// The server closed its side of the connection.
	testutil.WaitFor(t, 5*time.Second, "the server to close the connection", func() bool { return closed.Load() == 1 })
}

// However fast the engine changes, a viewer gets at most rate updates per
// second.
func TestStream_CoalescesUpdatesToTheRate(t *testing.T) {
	hub := NewHub(Options{StateInterval: time.Millisecond})
	s := newSimulated(t, hub, 64)
	srv := httptest.NewServer(Handler(hub, HandlerOptions{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/ui/stream?view=engine&rate=4")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.submit(s.sim.Now(), "cmpl-y", 20, 2)
			s.sim.Run(0)
			time.Sleep(time.Millisecond)
		}
	}()
	events := 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	start := time.Now()
	for sc.Scan() && time.Since(start) < 2*time.Second {
		if strings.HasPrefix(sc.Text(), "data: ") {
			events++
		}
	}
	close(stop)
	<-done
	// 2 s at 4 per second, plus the first update sent at once: at most 9
	// (10 allows for a tick at the very edge); at least 2 even on a starved
	// machine, to show it streams at all.
	if events < 2 || events > 10 {
		t.Errorf("%d updates in 2 s at rate=4; want 2 to 10", events)
	}
}
