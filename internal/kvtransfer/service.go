package kvtransfer

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// Options configure a Service. Zero values get the documented defaults.
type Options struct {
	// EngineID is the remote_engine_id this worker answers to.
	EngineID string
	// AdvertiseHost is the host written into remote_host.
	AdvertiseHost string
	// BootstrapHost and BootstrapPort are where the Dynamo bootstrap
	// listener binds; port 0 means no listener.
	BootstrapHost string
	BootstrapPort int
	// BootstrapListener, when set, is used instead of binding
	// BootstrapHost:BootstrapPort (tests hand in a kernel-chosen port).
	BootstrapListener net.Listener
	// Timeout bounds each rendezvous step (default DefaultBootstrapTimeout)
	// and each side-channel HTTP call.
	Timeout time.Duration
	// HTTPClient makes the side-channel calls (default: a client with
	// Timeout).
	HTTPClient *http.Client
	// Logger receives side-channel logs (default: discard).
	Logger *slog.Logger
	// Notifications counts release notifications the prefill worker did
	// not accept (may be nil).
	Notifications NotificationObserver
	// AllowedHosts widens the prefill hosts the decode side may dial
	// (--kv-transfer-allowed-hosts): host names (exact, never resolved),
	// IPs, CIDRs, or "*". Loopback and AdvertiseHost are always allowed.
	AllowedHosts []string
	// ClientAPIKey is sent as a Bearer token on side-channel calls to a
	// prefill worker whose side channel is guarded (GuardedHandler).
	ClientAPIKey string
	// MaxBootstrapConns bounds the bootstrap connections served at once
	// (0 = DefaultMaxBootstrapConns); one more is closed at once.
	MaxBootstrapConns int
}

// DefaultMaxBootstrapConns bounds concurrent bootstrap connections: each
// may wait a whole timeout for its room, so an unbounded number of idle
// connections would hold as many goroutines and descriptors.
const DefaultMaxBootstrapConns = 1024

// bootstrapRoomTimeout bounds the wait for a connection's 8-byte room id
// (the decode side sends it as soon as it connects): the bootstrap port's
// header deadline. Waiting for the room to be held is bounded by Timeout.
const bootstrapRoomTimeout = 5 * time.Second

// NotificationObserver counts failed release notifications
// (vllm:nixl_num_failed_notifications). It must be safe for concurrent use.
type NotificationObserver interface {
	ObserveFailedNotification(rank int)
}

// Service is one worker instance's side channel: the prefill side's
// directory of held handoffs with its HTTP and bootstrap endpoints, and the
// decode side's client. Close stops it and waits for its goroutines.
type Service struct {
	opts    Options
	engines []*engine.Engine
	log     *slog.Logger
	timeout time.Duration
	client  *http.Client

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ln     net.Listener // bootstrap listener, nil without one

	httpPort atomic.Int32
	allow    *hostAllowList
	roomLog  rateLog // bogus or unclaimed bootstrap rooms
	connLog  rateLog // bootstrap connections refused over MaxBootstrapConns
	conns    chan struct{}

	mu       sync.Mutex
	handoffs map[string]*handoff  // by remote_request_id
	byRoom   map[uint64]*handoff  // held handoffs with a room
	waiters  map[uint64]*roomWait // rendezvous that arrived before their room
	// acked remembers rooms already acknowledged, until when: a later
	// claim of the same room (the rightful decode after a stranger, or a
	// retry) is acknowledged at once instead of waiting for a room whose
	// blocks are gone.
	acked map[uint64]time.Time
}

// handoff is a prefill request whose blocks are (or will be) held.
type handoff struct {
	requestID string
	rank      int
	engineReq uint64
	room      uint64
	hasRoom   bool
	delay     time.Duration // modeled transfer time (bootstrap rooms)
	held      bool
	blocks    []int
	// completeAt is when a bootstrap room is complete: the first token
	// plus the modeled transfer time.
	completeAt time.Time
}

// roomWait is a rendezvous waiting for its room to be held.
type roomWait struct {
	ready   chan struct{}
	handoff *handoff
	n       int
}

// New starts a Service over a worker instance's engines (engines[r] is DP
// rank r), binding the bootstrap listener when a port is configured.
func New(engines []*engine.Engine, opts Options) (*Service, error) {
	allow, err := newHostAllowList(opts.AdvertiseHost, opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	s := &Service{opts: opts, engines: engines, log: opts.Logger, timeout: opts.Timeout, client: opts.HTTPClient,
		allow: allow, handoffs: map[string]*handoff{}, byRoom: map[uint64]*handoff{}, waiters: map[uint64]*roomWait{},
		acked: map[uint64]time.Time{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.timeout <= 0 {
		s.timeout = DefaultBootstrapTimeout
	}
	if s.client == nil {
		s.client = &http.Client{Timeout: s.timeout}
	}
	maxConns := opts.MaxBootstrapConns
	if maxConns <= 0 {
		maxConns = DefaultMaxBootstrapConns
	}
	s.conns = make(chan struct{}, maxConns)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts.BootstrapListener != nil {
		s.ln = opts.BootstrapListener
		s.wg.Add(1)
		go s.serveBootstrap(s.ln)
	} else if opts.BootstrapPort > 0 {
		addr := net.JoinHostPort(opts.BootstrapHost, strconv.Itoa(opts.BootstrapPort))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			s.cancel()
			return nil, fmt.Errorf("bootstrap listener on %s: %w", addr, err)
		}
		s.ln = ln
		s.wg.Add(1)
		go s.serveBootstrap(ln)
	}
	return s, nil
}

// Close stops the bootstrap listener and every side-channel goroutine.
func (s *Service) Close() {
	s.cancel()
	if s.ln != nil {
		_ = s.ln.Close()
	}
	s.wg.Wait()
}

// BootstrapPort returns the bound bootstrap port (0 without a listener).
func (s *Service) BootstrapPort() int {
	if s.ln == nil {
		return 0
	}
	return s.ln.Addr().(*net.TCPAddr).Port
}

// SetHTTPPort records the worker's bound HTTP port, the remote_port of
// handoffs pulled over HTTP.
func (s *Service) SetHTTPPort(port int) { s.httpPort.Store(int32(port)) }

// EngineID returns the remote_engine_id this worker answers to.
func (s *Service) EngineID() string { return s.opts.EngineID }

// HandoffSpec describes a prefill request about to be submitted.
type HandoffSpec struct {
	Rank      int
	EngineReq uint64 // the engine request id
	RequestID string // remote_request_id
	// Room and HasRoom: the bootstrap room, when the request has one.
	Room    uint64
	HasRoom bool
	// Delay is the modeled transfer time of the whole prompt.
	Delay time.Duration
	// Timeout is the longest the blocks are held.
	Timeout time.Duration
	// AutoRelease frees the blocks Delay after the first token instead of
	// waiting for a pull or rendezvous (no side channel).
	AutoRelease bool
}

// NewHandoff registers a prefill request and returns the engine's handoff
// settings for it.
func (s *Service) NewHandoff(spec HandoffSpec) *engine.Handoff {
	h := &handoff{requestID: spec.RequestID, rank: spec.Rank, engineReq: spec.EngineReq,
		room: spec.Room, hasRoom: spec.HasRoom, delay: spec.Delay}
	s.mu.Lock()
	s.handoffs[spec.RequestID] = h
	s.mu.Unlock()
	eh := &engine.Handoff{Timeout: spec.Timeout, OnReleased: func(bool) { s.forget(h) }}
	if spec.AutoRelease {
		eh.ReleaseAfter = max(spec.Delay, time.Nanosecond)
	}
	return eh
}

// Address is where a decode worker reaches a held handoff.
type Address struct {
	EngineID string
	Host     string
	Port     int
}

// Held records that a prefill request finished with its blocks held and
// returns the address to put into its kv_transfer_params: the bootstrap
// port for a request with a room, else the HTTP port (or 0 when
// noSideChannel).
func (s *Service) Held(requestID string, blocks []int, noSideChannel bool) Address {
	addr := Address{EngineID: s.opts.EngineID, Host: s.opts.AdvertiseHost}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.handoffs[requestID]
	switch {
	case noSideChannel:
	case h != nil && h.hasRoom && s.ln != nil:
		addr.Port = s.BootstrapPort()
	default:
		addr.Port = int(s.httpPort.Load())
	}
	if h == nil {
		return addr // already released (a zero timeout)
	}
	h.held = true
	h.blocks = blocks
	h.completeAt = time.Now().Add(h.delay)
	if h.hasRoom {
		s.byRoom[h.room] = h
		if w := s.waiters[h.room]; w != nil {
			w.handoff = h
			close(w.ready)
			delete(s.waiters, h.room)
		}
	}
	return addr
}

// Abandon forgets a registered prefill request that finished without
// holding blocks (aborted, cut short, rejected).
func (s *Service) Abandon(requestID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.handoffs[requestID]; h != nil && !h.held {
		delete(s.handoffs, requestID)
	}
}

// forget drops a handoff whose blocks the engine has freed. It runs on the
// engine goroutine.
func (s *Service) forget(h *handoff) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handoffs[h.requestID] == h {
		delete(s.handoffs, h.requestID)
	}
	if h.hasRoom && s.byRoom[h.room] == h {
		delete(s.byRoom, h.room)
	}
}

// NumHandoffs returns the handoffs registered and not yet released.
func (s *Service) NumHandoffs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.handoffs)
}

// release asks the engine holding h's blocks to free them.
func (s *Service) release(h *handoff) {
	if h.rank >= 0 && h.rank < len(s.engines) {
		s.engines[h.rank].ReleaseHeld(h.engineReq)
	}
}

// roomWaiter returns a waiter for room: already ready when the room's
// handoff is held.
func (s *Service) roomWaiter(room uint64) *roomWait {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until, ok := s.acked[room]; ok && time.Now().Before(until) {
		w := &roomWait{ready: make(chan struct{}), handoff: &handoff{room: room, hasRoom: true, rank: -1}}
		close(w.ready)
		return w
	}
	if h := s.byRoom[room]; h != nil {
		w := &roomWait{ready: make(chan struct{}), handoff: h}
		close(w.ready)
		return w
	}
	w := s.waiters[room]
	if w == nil {
		w = &roomWait{ready: make(chan struct{})}
		s.waiters[room] = w
	}
	w.n++
	return w
}

// dropWaiter ends one rendezvous' interest in a room.
func (s *Service) dropWaiter(room uint64, w *roomWait) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiters[room] == w {
		if w.n--; w.n == 0 {
			delete(s.waiters, room)
		}
	}
}
