package testutil

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeTB records a fatal failure and ends its goroutine, as testing.T does.
type fakeTB struct {
	testing.TB
	mu    sync.Mutex
	fatal string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Cleanup(func()) {}

// run calls body with the fake on its own goroutine and returns the fatal
// message, "" when body returned normally.
func (f *fakeTB) run(body func(tb testing.TB)) string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal
}

func TestWaitForReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	WaitFor(t, 5*time.Second, "third call", func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}
}

func TestWaitForFailsAfterTheTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(tb testing.TB)
		want string
	}{
		{"WaitFor names what it waited for", func(tb testing.TB) {
			WaitFor(tb, 30*time.Millisecond, "the moon", func() bool { return false })
		}, "timed out after 30ms: waiting for the moon"},
		{"WaitUntil gives the last reason", func(tb testing.TB) {
			n := 0
			WaitUntil(tb, 30*time.Millisecond, func() string { n++; return "attempt " + strconv.Itoa(n) })
		}, "timed out after 30ms: attempt "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			msg := (&fakeTB{}).run(tc.wait)
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("failure %q, want it to start with %q", msg, tc.want)
			}
			if took := time.Since(start); took < 30*time.Millisecond {
				t.Errorf("gave up after %v, before the timeout", took)
			}
		})
	}
}

func TestListenHoldsAKernelChosenPort(t *testing.T) {
	l := Listen(t)
	port := Port(l.Addr())
	if port == 0 {
		t.Fatal("port 0")
	}
	// The port is held: nobody else can listen on it.
	if other, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		other.Close()
		t.Fatalf("port %d could be bound twice", port)
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatal(err)
	}
}

func TestBindZMQReportsTheBoundEndpoint(t *testing.T) {
	zctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer zctx.Term()
	pull, _ := zctx.NewSocket(zmq.PULL)
	defer pull.Close()
	_ = pull.SetLinger(0)
	ep := BindZMQ(t, pull)
	if !strings.HasPrefix(ep, "tcp://127.0.0.1:") || EndpointPort(t, ep) == 0 {
		t.Fatalf("endpoint %q", ep)
	}
	push, _ := zctx.NewSocket(zmq.PUSH)
	defer push.Close()
	_ = push.SetLinger(0)
	if err := push.Connect(ep); err != nil {
		t.Fatal(err)
	}
	if _, err := push.Send("hello", 0); err != nil {
		t.Fatal(err)
	}
	_ = pull.SetRcvtimeo(5 * time.Second)
	if msg, err := pull.Recv(0); err != nil || msg != "hello" {
		t.Fatalf("received %q, %v", msg, err)
	}
}

func TestWithPortRuns(t *testing.T) {
	t.Run("runs of free ports that do not overlap", func(t *testing.T) {
		var held []net.Listener
		defer func() {
			for _, l := range held {
				l.Close()
			}
		}()
		WithPortRuns(t, 3, 2, func(bases []int) error {
			if len(bases) != 3 {
				t.Fatalf("bases %v", bases)
			}
			for _, base := range bases {
				for port := base; port < base+2; port++ {
					l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
					if err != nil { // taken meanwhile (or overlapping): try again
						for _, l := range held {
							l.Close()
						}
						held = nil
						return err
					}
					held = append(held, l)
				}
			}
			return nil
		})
		if len(held) != 6 {
			t.Errorf("held %d ports, want 6", len(held))
		}
	})
	t.Run("a failed attempt is retried", func(t *testing.T) {
		attempts := 0
		WithPortRuns(t, 1, 1, func([]int) error {
			if attempts++; attempts < 3 {
				return errors.New("address already in use")
			}
			return nil
		})
		if attempts != 3 {
			t.Errorf("%d attempts, want 3", attempts)
		}
	})
	t.Run("it gives up with the last error", func(t *testing.T) {
		attempts := 0
		msg := (&fakeTB{}).run(func(tb testing.TB) {
			WithPortRuns(tb, 1, 2, func([]int) error { attempts++; return errors.New("still busy") })
		})
		// Every run found is attempted; on a busy loopback a search for a
		// run can fail too, which costs an attempt without calling it.
		if attempts < 1 || attempts > portRunAttempts || !strings.Contains(msg, "still busy") {
			t.Errorf("%d attempts, failure %q", attempts, msg)
		}
	})
}

// FirstDifference names the first differing line and shows both sides
// with the lines before it.
func TestFirstDifference(t *testing.T) {
	want := []byte("a\nb\nc\nd\n")
	got := []byte("a\nb\nX\nd")
	d := FirstDifference(want, got, 1)
	for _, s := range []string{"line 3", "  b\n", "- c\n", "+ X\n", "- d\n", `+ "d" (no newline at end)`} {
		if !strings.Contains(d, s) {
			t.Errorf("FirstDifference lacks %q:\n%s", s, d)
		}
	}
	if d := FirstDifference(want, []byte("a\nb\n"), 1); !strings.Contains(d, "line 3") || !strings.Contains(d, "- c\n") {
		t.Errorf("a truncated output:\n%s", d)
	}
}

// Golden passes on equal bytes, writes with update, and fails on a
// difference, leaving the output beside the golden file.
func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.txt")
	Golden(t, path, []byte("one\n"), true)
	Golden(t, path, []byte("one\n"), false)
	rt := &recordTB{TB: t}
	Golden(rt, path, []byte("two\n"), false)
	if !strings.Contains(rt.errors, "+ two") {
		t.Fatalf("a differing output reported %q", rt.errors)
	}
	if b, err := os.ReadFile(path + ".got"); err != nil || string(b) != "two\n" {
		t.Fatalf("the .got file: %q, %v", b, err)
	}
}

// recordTB records Errorf's messages instead of failing.
type recordTB struct {
	testing.TB
	errors string
}

func (r *recordTB) Helper() {}

func (r *recordTB) Errorf(format string, args ...any) { r.errors += fmt.Sprintf(format, args...) }
