package events

import (
	"fmt"
	"log/slog"
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
		if t == zmq.PUB {
			// Make a full subscriber pipe visible as EAGAIN, so that a batch
			// dropped at the high-water mark is counted instead of being
			// discarded silently by libzmq; the sequence number still shows
			// consumers the gap, and replay can fill it.
			if err := s.SetXpubNodrop(true); err != nil {
				return err
			}
		}
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

// sendFrames sends a multipart message without blocking. With
// ZMQ_XPUB_NODROP the high-water mark check happens on the first frame (and
// pipes only become fuller between whole messages), so a message is sent
// completely or not at all.
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
		if l.ownCtx != nil {
			err = l.ownCtx.Term()
		}
	})
	return err
}
