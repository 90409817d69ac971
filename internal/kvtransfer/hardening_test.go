package kvtransfer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestSideChannel404DoesNotLeakTheEngineID asks for another engine: the
// answer names neither engine id (a release needs the real one).
func TestSideChannel404DoesNotLeakTheEngineID(t *testing.T) {
	e := startEngine(t)
	p, err := New([]*engine.Engine{e}, Options{EngineID: "prefill-secret-engine", AdvertiseHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Post(srv.URL+ReleasePath, "application/json",
		strings.NewReader(`{"remote_engine_id":"guess","remote_request_id":"r"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || bytes.Contains(body, []byte("prefill-secret-engine")) || bytes.Contains(body, []byte("guess")) {
		t.Errorf("%d %s: want a 404 naming no engine", resp.StatusCode, body)
	}
}

// TestGuardedSideChannelNeedsTheKey: without the API key a release is
// refused (401) and the handoff stays held; the decode side, configured
// with the key, pulls and releases it.
func TestGuardedSideChannelNeedsTheKey(t *testing.T) {
	e := startEngine(t)
	p, err := New([]*engine.Engine{e}, Options{EngineID: "prefill-0", AdvertiseHost: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv := httptest.NewServer(p.GuardedHandler(BearerAuth([]string{"s3cret"})))
	t.Cleanup(srv.Close)
	p.SetHTTPPort(testutil.Port(srv.Listener.Addr()))
	blocks := prefill(t, e, p, HandoffSpec{RequestID: "req-1", Timeout: time.Minute})

	for _, auth := range []string{"", "Bearer wrong"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+ReleasePath,
			strings.NewReader(`{"remote_engine_id":"prefill-0","remote_request_id":"req-1"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("release with %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	if e.Load().HeldBlocks != len(blocks) {
		t.Fatalf("an unauthorized release freed the hold: %d blocks held", e.Load().HeldBlocks)
	}
	remote := Remote{Host: "127.0.0.1", Port: testutil.Port(srv.Listener.Addr()), EngineID: "prefill-0",
		RequestID: "req-1", BlockIDs: blocks}
	for key, ok := range map[string]bool{"": false, "s3cret": true} {
		d, err := New(nil, Options{Timeout: 2 * time.Second, ClientAPIKey: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Prepare(context.Background(), remote)
		d.Close()
		if (err == nil) != ok {
			t.Errorf("decode side with key %q: %v", key, err)
		}
	}
}

// TestStrangerClaimingARoomDoesNotBlockTheDecode: a client that guesses a
// held room id claims it first; the rightful decode, coming after, is
// acknowledged at once (it waited the whole timeout and failed before).
func TestStrangerClaimingARoomDoesNotBlockTheDecode(t *testing.T) {
	e := startEngine(t)
	s := startService(t, []*engine.Engine{e}, 3*time.Second)
	const room = 4242
	prefill(t, e, s, HandoffSpec{RequestID: "req-1", Room: room, HasRoom: true, Timeout: time.Minute})
	if err := Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), room, time.Second); err != nil {
		t.Fatalf("the stranger's claim: %v", err)
	}
	start := time.Now()
	if err := Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), room, 3*time.Second); err != nil {
		t.Fatalf("the rightful decode after the stranger: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the rightful decode waited %v", took)
	}
	testutil.WaitFor(t, 5*time.Second, "hold released once", func() bool { return e.Load().HeldBlocks == 0 })
}

// TestBogusRoomsAreOneWarning sends 30 rooms nobody holds: their warnings
// fold into one line with a count instead of one line each.
func TestBogusRoomsAreOneWarning(t *testing.T) {
	var mu sync.Mutex
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	s, err := New(nil, Options{EngineID: "p", AdvertiseHost: "127.0.0.1", BootstrapListener: testutil.Listen(t),
		Timeout: 50 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for room := range uint64(30) {
		wg.Go(func() { _ = Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), 1000+room, time.Second) })
	}
	wg.Wait()
	mu.Lock()
	n := strings.Count(logs.String(), "rooms not acknowledged")
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d warning lines for 30 bogus rooms, want 1:\n%s", n, logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestHostAllowList(t *testing.T) {
	l, err := newHostAllowList("prefill-a", []string{"10.1.0.0/16", "192.168.7.7", "decode.example", "[fd00::1]"})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.3.3.3": true, "::1": true, "[::1]": true, "localhost": true, "prefill-a": true,
		"10.1.200.3": true, "10.2.0.1": false, "192.168.7.7": true, "192.168.7.8": false, "DECODE.example": true,
		"fd00::1": true, "fd00::2": false, "evil.example": false, "169.254.169.254": false, "0.0.0.0": false,
	} {
		if got := l.allows(host); got != want {
			t.Errorf("allows(%q) = %v, want %v", host, got, want)
		}
	}
	any, _ := newHostAllowList("", []string{"*"})
	if !any.allows("anything.example") {
		t.Error(`"*" does not allow every host`)
	}
	if _, err := newHostAllowList("", []string{"10.0.0.0/99"}); err == nil {
		t.Error("a bad CIDR was accepted")
	}
}

// TestBootstrapSlowClientsAreBounded holds silent connections open on the
// bootstrap port: beyond MaxBootstrapConns one is closed at once, and each
// silent one is closed at the room deadline, after which the port serves a
// real rendezvous again.
func TestBootstrapSlowClientsAreBounded(t *testing.T) {
	e := startEngine(t)
	s, err := New([]*engine.Engine{e}, Options{EngineID: "p", AdvertiseHost: "127.0.0.1",
		BootstrapListener: testutil.Listen(t), Timeout: 300 * time.Millisecond, MaxBootstrapConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := "127.0.0.1:" + strconv.Itoa(s.BootstrapPort())
	var silent []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		silent = append(silent, c)
	}
	time.Sleep(50 * time.Millisecond) // all four accepted
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("the fifth connection was not closed at once: %v", err)
	}
	for _, c := range silent {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Errorf("a silent connection was not closed at its deadline: %v", err)
		}
	}
	const room = 77
	prefill(t, e, s, HandoffSpec{RequestID: "r", Room: room, HasRoom: true, Timeout: time.Minute})
	testutil.WaitFor(t, 2*time.Second, "a rendezvous after the silent ones left", func() bool {
		return Rendezvous(context.Background(), "127.0.0.1", s.BootstrapPort(), room, time.Second) == nil
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
