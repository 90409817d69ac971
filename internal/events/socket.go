package events

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// newSocket creates a socket of type t with linger 0 and the given send
// high-water mark, then binds or connects it. The error names the endpoint.
func newSocket(zctx *zmq.Context, t zmq.Type, endpoint string, bind bool, sndhwm int) (*zmq.Socket, error) {
	verb := "connect"
	if bind {
		verb = "bind"
	}
	fail := func(err error) error {
		return fmt.Errorf("zmq %s %s %s: %w", t, verb, endpoint, err)
	}
	s, err := zctx.NewSocket(t)
	if err != nil {
		return nil, fail(err)
	}
	setup := func() error {
		if err := s.SetLinger(0); err != nil {
			return err
		}
		if err := s.SetSndhwm(sndhwm); err != nil {
			return err
		}
		// A plain PUB, as vLLM's ZmqEventPublisher (vllm/distributed/
		// kv_events.py) has: at the high-water mark libzmq drops the
		// message for that one subscriber only. ZMQ_XPUB_NODROP would
		// refuse the message for every subscriber as long as any one pipe
		// is full, so a subscriber that connects and never reads would
		// freeze delivery to all the others. The slow one sees a gap in
		// the sequence numbers and can fill it from the replay socket.
		if needsIPv6(endpoint) {
			if err := s.SetIpv6(true); err != nil {
				return err
			}
		}
		if bind {
			return s.Bind(endpoint)
		}
		return s.Connect(endpoint)
	}
	if err := setup(); err != nil {
		_ = s.Close()
		return nil, fail(err)
	}
	return s, nil
}

// isAgain reports whether a non-blocking ZMQ call would have blocked.
func isAgain(err error) bool {
	return zmq.AsErrno(err) == zmq.Errno(syscall.EAGAIN)
}

// sendFrames sends a multipart message without blocking. On a PUB socket
// a full subscriber pipe drops the whole message for that subscriber (libzmq
// checks the high-water mark at a message's first frame), so the send
// itself does not fail for it; an error here is the socket's own.
func sendFrames(s *zmq.Socket, frames ...[]byte) error {
	last := len(frames) - 1
	for i, f := range frames {
		flags := zmq.DONTWAIT
		if i < last {
			flags |= zmq.SNDMORE
		}
		if _, err := s.SendBytes(f, flags); err != nil {
			return err
		}
	}
	return nil
}

// rateLog logs a counted condition at most once per interval, reporting how
// many occurrences were folded into each line. Safe for concurrent use.
type rateLog struct {
	last    atomic.Int64 // unix nanos of the last line
	pending atomic.Uint64
}

func (r *rateLog) note(log *slog.Logger, msg string, attrs ...any) {
	r.pending.Add(1)
	now := time.Now().UnixNano()
	last := r.last.Load()
	if last != 0 && now-last < int64(time.Second) {
		return
	}
	if !r.last.CompareAndSwap(last, now) {
		return
	}
	log.Warn(msg, append(attrs, "count", r.pending.Swap(0))...)
}

// lifecycle is what both publishers share: the quit signal of their socket
// goroutine, that goroutine's end, and the ZMQ context they own, if any.
type lifecycle struct {
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
	ownCtx *zmq.Context // terminated by stop when the publisher created it
	// ipcFiles are the socket files of bound ipc:// endpoints: libzmq
	// leaves them behind, so stop removes them once the sockets are closed.
	ipcFiles []string
}

// bound notes a socket's endpoint; a bound ipc:// path (not an abstract
// "@name") is removed at stop.
func (l *lifecycle) bound(endpoint string, bind bool) {
	if path, ok := strings.CutPrefix(endpoint, "ipc://"); ok && bind && path != "" && !strings.HasPrefix(path, "@") {
		l.ipcFiles = append(l.ipcFiles, path)
	}
}

// removeIPCFiles deletes the noted socket files; call it after the sockets
// are closed.
func (l *lifecycle) removeIPCFiles() {
	for _, path := range l.ipcFiles {
		_ = os.Remove(path)
	}
	l.ipcFiles = nil
}

// start prepares the channels; call it before the goroutine starts.
func (l *lifecycle) start() {
	l.quit = make(chan struct{})
	l.done = make(chan struct{})
}

// context returns zctx, or a new context the publisher then owns.
func (l *lifecycle) context(zctx *zmq.Context) (*zmq.Context, error) {
	if zctx != nil {
		return zctx, nil
	}
	zctx, err := zmq.NewContext()
	if err != nil {
		return nil, fmt.Errorf("zmq context: %w", err)
	}
	l.ownCtx = zctx
	return zctx, nil
}

// stop signals the goroutine, waits for it to end (it closes its sockets),
// then terminates an owned context. Idempotent.
func (l *lifecycle) stop() error {
	var err error
	l.once.Do(func() {
		close(l.quit)
		<-l.done
		l.removeIPCFiles()
		if l.ownCtx != nil {
			err = l.ownCtx.Term()
		}
	})
	return err
}
