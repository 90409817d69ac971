package loadgen

// The write floor: what delivering one SSE chunk to each of N loopback TCP
// connections costs when nothing else runs. The server writes each streamed
// token as one non-blocking write(2) per connection per engine pass
// (internal/sockwrite, TCP_NODELAY on); RunFloorWriter does exactly that,
// through the same package, every Interval and nothing else, and
// RunFloorReader drains the connections in another process. On loopback the writer's write(2) also runs the receiving
// side's TCP input and the reader's wake-up (softirq in the writer's
// context), so the figure is the whole physical path, not the copy alone.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mocker-server/mocker-server/internal/sockwrite"
)

// FloorConfig describes a write-floor run. Zero fields get the defaults of
// FloorDefaults, except Warmup (0 = no warm-up ticks).
type FloorConfig struct {
	// Addr is the writer's listen address and the reader's dial address.
	Addr string `json:"addr"`
	// Listener, when set, is used by RunFloorWriter instead of listening on
	// Addr (the writer closes it). Tests pass a kernel-chosen port this way.
	Listener net.Listener `json:"-"`
	// Conns is the number of connections (N).
	Conns int `json:"conns"`
	// Ticks is the number of measured ticks; Warmup ticks before them are
	// written but not counted.
	Ticks  int `json:"ticks"`
	Warmup int `json:"warmup"`
	// Interval is the tick period (the engine's pass period).
	Interval time.Duration `json:"interval_ns"`
	// ChunkBytes is the size of each write: one chat.completion.chunk SSE
	// event framed as an HTTP/1.1 chunk, padded to this size.
	ChunkBytes int `json:"chunk_bytes"`
	// Writers > 1 splits the connections into that many contiguous shards
	// written in parallel, one goroutine each (the multi-core floor).
	Writers int `json:"writers"`
}

// FloorDefaults returns a FloorConfig with every default filled in (Conns
// must still be set).
func FloorDefaults() FloorConfig {
	return FloorConfig{Addr: "127.0.0.1:18090", Ticks: 50, Warmup: 5, Interval: 100 * time.Millisecond,
		ChunkBytes: 280, Writers: 1}
}

// floorSpareFDs is the margin of descriptors beyond the N connections
// (listener, epoll, stdio, output files, the runtime's own).
const floorSpareFDs = 64

// floorAcceptTimeout bounds the wait for the reader's N connections.
const floorAcceptTimeout = 30 * time.Second

// floorDialWindow is how long the reader retries refused dials (the writer
// not listening yet).
const floorDialWindow = 10 * time.Second

func (c *FloorConfig) normalize() error {
	d := FloorDefaults()
	if c.Conns <= 0 {
		return errors.New("conns must be > 0")
	}
	if c.Addr == "" {
		c.Addr = d.Addr
	}
	if c.Ticks == 0 {
		c.Ticks = d.Ticks
	}
	if c.Ticks < 0 || c.Warmup < 0 {
		return errors.New("ticks and warmup must be ≥ 0")
	}
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	if c.Interval < 0 {
		return errors.New("interval must be > 0")
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = d.ChunkBytes
	}
	if c.ChunkBytes < minFloorChunk {
		return fmt.Errorf("chunk bytes must be ≥ %d (an HTTP chunk holding a data: event)", minFloorChunk)
	}
	if c.Writers == 0 {
		c.Writers = d.Writers
	}
	if c.Writers < 0 {
		return errors.New("writers must be > 0")
	}
	c.Writers = min(c.Writers, c.Conns)
	return nil
}

// totalTicks is the number of writes per connection.
func (c *FloorConfig) totalTicks() int { return c.Warmup + c.Ticks }

// ExpectedBytes is what each side moves in a complete run:
// Conns × (Warmup + Ticks) × ChunkBytes.
func (c FloorConfig) ExpectedBytes() int64 {
	return int64(c.Conns) * int64(c.Warmup+c.Ticks) * int64(c.ChunkBytes)
}

// FloorResult is the outcome of a write-floor run.
type FloorResult struct {
	Config     FloorConfig `json:"config"`
	GOMAXPROCS int         `json:"gomaxprocs"`
	// Writes counts the measured writes (Conns × Ticks); BytesWritten
	// counts every byte written, warm-up included.
	Writes       int64 `json:"writes"`
	BytesWritten int64 `json:"bytes_written"`

	// Per tick, tick write time / Conns: the wall time of one write, over
	// the measured ticks.
	WriteUsP50 float64 `json:"write_us_p50"`
	WriteUsP10 float64 `json:"write_us_p10"`
	WriteUsP90 float64 `json:"write_us_p90"`
	// CPUUsPerWrite is the process's CPU time (user + sys) over the measured
	// ticks divided by Writes.
	CPUUsPerWrite  float64 `json:"cpu_us_per_write"`
	CPUUserSeconds float64 `json:"cpu_user_seconds"`
	CPUSysSeconds  float64 `json:"cpu_sys_seconds"`

	// The tick write time: from a tick's first write to the end of its last.
	TickWriteMsP50 float64 `json:"tick_write_ms_p50"`
	TickWriteMsP99 float64 `json:"tick_write_ms_p99"`
	TickWriteMsMax float64 `json:"tick_write_ms_max"`
	// OverrunTicks counts measured ticks whose writes took longer than
	// Interval (the next tick then starts late).
	OverrunTicks int `json:"overrun_ticks"`
	// WakeLateMs: how late the writer woke after each measured tick's
	// deadline (timer slack and overruns); not part of the tick write time.
	WakeLateMsP50 float64 `json:"wake_late_ms_p50"`
	WakeLateMsP99 float64 `json:"wake_late_ms_p99"`

	// FloorLagP99Ms is the p99 token-delivery lag this floor alone implies:
	// a pass's writes start at its deadline and go out in turn, so stream i
	// of N is written (i+1)/N of the tick write time late and the p99 lag is
	// 0.99 × the median tick write time.
	FloorLagP99Ms float64 `json:"floor_lag_p99_ms"`
	// WriteLagMs is the same lag measured: per measured write, the time
	// from its tick's deadline to the write's return (timer wake-up and
	// tick-to-tick variation included, as in the server's
	// mocker_token_delivery_lag_seconds), p50 and p99 over all writes.
	WriteLagMsP50 float64 `json:"write_lag_ms_p50"`
	WriteLagMsP99 float64 `json:"write_lag_ms_p99"`

	// TickWriteMs is every measured tick's write time, in order.
	TickWriteMs []float64 `json:"tick_write_ms"`
}

// WriteJSON writes the result as indented JSON.
func (r *FloorResult) WriteJSON(w io.Writer) error { return writeIndentedJSON(w, r) }

// WriteTable writes a human-readable report.
func (r *FloorResult) WriteTable(w io.Writer) {
	c := &r.Config
	fmt.Fprintf(w, "mocker-bench floor-write: %s, %d connections, %d writer(s), GOMAXPROCS %d\n",
		c.Addr, c.Conns, c.Writers, r.GOMAXPROCS)
	fmt.Fprintf(w, "  one %d-byte write per connection every %v, %d ticks measured after %d warm-up\n",
		c.ChunkBytes, c.Interval, c.Ticks, c.Warmup)
	fmt.Fprintf(w, "writes      %d measured, %d bytes written in all\n", r.Writes, r.BytesWritten)
	fmt.Fprintf(w, "µs/write    wall p50 %.3f (p10 %.3f, p90 %.3f), cpu %.3f (user %.3f s, sys %.3f s)\n",
		r.WriteUsP50, r.WriteUsP10, r.WriteUsP90, r.CPUUsPerWrite, r.CPUUserSeconds, r.CPUSysSeconds)
	fmt.Fprintf(w, "tick write  p50 %.3f ms, p99 %.3f ms, max %.3f ms, %d overrun(s) of %v\n",
		r.TickWriteMsP50, r.TickWriteMsP99, r.TickWriteMsMax, r.OverrunTicks, c.Interval)
	fmt.Fprintf(w, "wake late   p50 %.3f ms, p99 %.3f ms\n", r.WakeLateMsP50, r.WakeLateMsP99)
	fmt.Fprintf(w, "floor lag   p99 %.3f ms (0.99 × median tick write time)\n", r.FloorLagP99Ms)
	fmt.Fprintf(w, "write lag   p50 %.3f ms, p99 %.3f ms (measured per write from the tick deadline)\n", r.WriteLagMsP50, r.WriteLagMsP99)
}

// RaiseNoFileLimit raises the process's RLIMIT_NOFILE soft limit to its hard
// limit and fails when need descriptors still do not fit.
func RaiseNoFileLimit(need int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d): %w", lim.Max, err)
		}
	}
	if uint64(need) > lim.Cur {
		return fmt.Errorf("need %d file descriptors but RLIMIT_NOFILE is %d (hard limit %d; see ulimit -Hn): use fewer connections",
			need, lim.Cur, lim.Max)
	}
	return nil
}

// RunFloorWriter accepts cfg.Conns connections, then every cfg.Interval
// writes one cfg.ChunkBytes buffer to each of them (one non-blocking write
// each, in order, cfg.Writers shards in parallel) and measures the cost. It closes
// the connections at the end.
func RunFloorWriter(ctx context.Context, cfg FloorConfig) (*FloorResult, error) {
	if err := cfg.normalize(); err != nil {
		if cfg.Listener != nil {
			cfg.Listener.Close()
		}
		return nil, err
	}
	ln := cfg.Listener
	cfg.Listener = nil
	if err := RaiseNoFileLimit(cfg.Conns + floorSpareFDs); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return nil, err
		}
	}
	cfg.Addr = ln.Addr().String()

	// Watchdog: the accept phase ends within floorAcceptTimeout, the whole
	// run within that plus twice its nominal length plus 30 s. On expiry
	// or cancellation, expired deadlines fail any blocked I/O.
	limit := floorAcceptTimeout + 2*time.Duration(cfg.totalTicks()+1)*cfg.Interval + 30*time.Second
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var mu sync.Mutex // guards conns during the accept phase
	conns := make([]*net.TCPConn, 0, cfg.Conns)
	accepted := make(chan struct{})
	stopped := make(chan struct{})
	var acceptTimedOut atomic.Bool
	go func() {
		defer close(stopped)
		t := time.NewTimer(floorAcceptTimeout)
		defer t.Stop()
		select {
		case <-accepted:
		case <-t.C:
			acceptTimedOut.Store(true)
		case <-ctx.Done():
		}
		ln.Close() // unblocks Accept; no more connections are wanted
		<-ctx.Done()
		mu.Lock()
		for _, c := range conns {
			_ = c.SetDeadline(time.Now())
		}
		mu.Unlock()
	}()
	defer func() {
		cancel()
		<-stopped
		for _, c := range conns {
			c.Close()
		}
	}()

	for len(conns) < cfg.Conns {
		nc, err := ln.Accept()
		if err != nil {
			switch {
			case acceptTimedOut.Load():
				return nil, fmt.Errorf("accepted only %d of %d connections in %v", len(conns), cfg.Conns, floorAcceptTimeout)
			case ctx.Err() != nil:
				return nil, fmt.Errorf("accepted %d of %d connections: %w", len(conns), cfg.Conns, ctx.Err())
			}
			return nil, fmt.Errorf("accept: %w", err)
		}
		tc, ok := nc.(*net.TCPConn)
		if !ok {
			nc.Close()
			return nil, fmt.Errorf("listener returned a %T, not a *net.TCPConn", nc)
		}
		_ = tc.SetNoDelay(true) // Go's default, as the server has it
		mu.Lock()
		conns = append(conns, tc)
		mu.Unlock()
	}
	close(accepted)

	return floorTicks(ctx, &cfg, conns)
}

// floorShard is one writer goroutine's contiguous range of connections.
type floorShard struct {
	conns []*sockwrite.Conn
	start chan floorTick
	err   error
	// lags holds, per measured write, how late (ms) it completed after
	// its tick's deadline: the server's delivery-lag metric, for writes
	// alone.
	lags []float64
}

// floorTick is one tick's deadline and whether it is measured.
type floorTick struct {
	deadline time.Time
	measured bool
}

func (s *floorShard) write(buf []byte, t floorTick) {
	slice := time.Now()
	for i, c := range s.conns {
		n, err := c.TryWrite(buf)
		if err == nil && n < len(buf) {
			// The reader fell behind (the server would hand such a
			// stream to its handler): wait for it.
			_, err = c.TCP().Write(buf[n:])
		}
		if err != nil {
			s.err = err
			return
		}
		now := time.Now()
		if t.measured {
			s.lags = append(s.lags, float64(now.Sub(t.deadline))/float64(time.Millisecond))
		}
		if i%32 == 31 && now.Sub(slice) >= floorYieldSlice {
			// Yield before the Go scheduler's 10 ms slice runs out: a
			// goroutine that runs longer is preempted with a signal,
			// which costs more than the writes around it (measured:
			// about 15 % of a 10,000-connection tick).
			runtime.Gosched()
			slice = time.Now()
		}
	}
}

// floorYieldSlice is how long a writer runs before it yields.
const floorYieldSlice = 5 * time.Millisecond

// floorTicks runs the tick loop over the accepted connections.
func floorTicks(ctx context.Context, cfg *FloorConfig, tcp []*net.TCPConn) (*FloorResult, error) {
	buf := floorChunk(cfg.ChunkBytes)
	conns := make([]*sockwrite.Conn, len(tcp))
	for i, c := range tcp {
		conns[i] = new(sockwrite.Conn)
		if !conns[i].Open(c) {
			return nil, fmt.Errorf("connection %d: no descriptor to write to", i)
		}
	}
	k := cfg.Writers
	shards := make([]*floorShard, k)
	for s := range shards {
		shards[s] = &floorShard{conns: conns[s*len(conns)/k : (s+1)*len(conns)/k], start: make(chan floorTick)}
	}
	// Shard 0 is written by the tick loop itself (Writers 1 has no
	// hand-off); shards 1..k-1 by their own goroutines.
	ends := make(chan time.Time, k)
	var wg sync.WaitGroup
	for _, sh := range shards[1:] {
		wg.Go(func() {
			for t := range sh.start {
				sh.write(buf, t)
				ends <- time.Now()
			}
		})
	}
	defer func() {
		for _, sh := range shards[1:] {
			close(sh.start)
		}
		wg.Wait()
	}()

	tickWrite := make([]time.Duration, 0, cfg.Ticks)
	wakeLate := make([]time.Duration, 0, cfg.Ticks)
	var ru0, ru1 syscall.Rusage
	var written int64
	next := time.Now().Add(cfg.Interval)
	for tick := range cfg.totalTicks() {
		if tick == cfg.Warmup {
			if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru0); err != nil {
				return nil, fmt.Errorf("getrusage: %w", err)
			}
		}
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("tick %d: %w", tick, ctx.Err())
		}
		start := time.Now()
		t := floorTick{deadline: next, measured: tick >= cfg.Warmup}
		for _, sh := range shards[1:] {
			sh.start <- t
		}
		shards[0].write(buf, t)
		end := time.Now()
		for range k - 1 {
			if e := <-ends; e.After(end) {
				end = e
			}
		}
		for _, sh := range shards {
			if sh.err != nil {
				return nil, fmt.Errorf("tick %d: write: %w", tick, sh.err)
			}
		}
		written += int64(len(conns)) * int64(len(buf))
		if tick >= cfg.Warmup {
			tickWrite = append(tickWrite, end.Sub(start))
			wakeLate = append(wakeLate, start.Sub(next))
		}
		next = next.Add(cfg.Interval)
	}
	if cfg.Ticks > 0 {
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru1); err != nil {
			return nil, fmt.Errorf("getrusage: %w", err)
		}
	}
	res := floorSummary(cfg, tickWrite, wakeLate, &ru0, &ru1, written)
	var lags []float64
	for _, sh := range shards {
		lags = append(lags, sh.lags...)
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		res.WriteLagMsP50 = Percentile(lags, 0.50)
		res.WriteLagMsP99 = Percentile(lags, 0.99)
	}
	return res, nil
}

func floorSummary(cfg *FloorConfig, tickWrite, wakeLate []time.Duration, ru0, ru1 *syscall.Rusage, written int64) *FloorResult {
	res := &FloorResult{Config: *cfg, GOMAXPROCS: runtime.GOMAXPROCS(0), BytesWritten: written,
		Writes: int64(cfg.Conns) * int64(len(tickWrite))}
	if len(tickWrite) == 0 {
		return res
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	res.TickWriteMs = make([]float64, len(tickWrite))
	perWrite := make([]float64, len(tickWrite))
	for i, d := range tickWrite {
		res.TickWriteMs[i] = ms(d)
		perWrite[i] = float64(d) / float64(time.Microsecond) / float64(cfg.Conns)
		if d > cfg.Interval {
			res.OverrunTicks++
		}
	}
	slices.Sort(perWrite)
	res.WriteUsP50 = Percentile(perWrite, 0.50)
	res.WriteUsP10 = Percentile(perWrite, 0.10)
	res.WriteUsP90 = Percentile(perWrite, 0.90)
	tw := slices.Clone(res.TickWriteMs)
	slices.Sort(tw)
	res.TickWriteMsP50 = Percentile(tw, 0.50)
	res.TickWriteMsP99 = Percentile(tw, 0.99)
	res.TickWriteMsMax = tw[len(tw)-1]
	res.FloorLagP99Ms = 0.99 * res.TickWriteMsP50
	late := make([]float64, len(wakeLate))
	for i, d := range wakeLate {
		late[i] = ms(d)
	}
	slices.Sort(late)
	res.WakeLateMsP50 = Percentile(late, 0.50)
	res.WakeLateMsP99 = Percentile(late, 0.99)
	user := time.Duration(ru1.Utime.Nano() - ru0.Utime.Nano())
	sys := time.Duration(ru1.Stime.Nano() - ru0.Stime.Nano())
	res.CPUUserSeconds = user.Seconds()
	res.CPUSysSeconds = sys.Seconds()
	res.CPUUsPerWrite = float64(user+sys) / float64(time.Microsecond) / float64(res.Writes)
	return res
}

// minFloorChunk is the smallest chunk floorChunk can frame:
// "9\r\ndata: x\n\n\r\n".
const minFloorChunk = 14

// floorChunk returns n bytes of an HTTP/1.1 chunk carrying one SSE event:
// a chat.completion.chunk shaped like the server's (internal/api), its
// delta content padded so the framed chunk is exactly n bytes. Sizes too
// small for the JSON fall back to `data: xxx…\n\n`.
func floorChunk(n int) []byte {
	const (
		head = `data: {"id":"chatcmpl-floor0000000000000000000000000","object":"chat.completion.chunk","created":1700000000,"model":"mocker-model","choices":[{"index":0,"delta":{"content":"`
		tail = `"},"logprobs":null,"finish_reason":null}]}` + "\n\n"
	)
	frame := func(pre, post string) []byte {
		// n = len(hex(size)) + 2 + size + 2, size = len(pre) + pad + len(post).
		for digits := 1; digits <= 8; digits++ {
			size := n - 4 - digits
			pad := size - len(pre) - len(post)
			if pad < 0 || len(strconv.FormatInt(int64(size), 16)) != digits {
				continue
			}
			b := make([]byte, 0, n)
			b = strconv.AppendInt(b, int64(size), 16)
			b = append(b, "\r\n"...)
			b = append(b, pre...)
			for i := range pad {
				b = append(b, " floor"[i%6]) // word-like filler text
			}
			b = append(b, post...)
			return append(b, "\r\n"...)
		}
		return nil
	}
	if b := frame(head, tail); b != nil {
		return b
	}
	if b := frame("data: ", "\n\n"); b != nil {
		return b
	}
	// No digit count fits exactly (a size just past a hex power boundary):
	// not reachable for n ≥ minFloorChunk, but stay total.
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return b
}

// RunFloorReader dials cfg.Conns connections to cfg.Addr (retrying while
// the writer is not listening yet) and drains them, one goroutine per
// connection reading into a reusable 4096-byte buffer, until the writer
// closes them. It returns the bytes received; any failure other than EOF is
// an error.
func RunFloorReader(ctx context.Context, cfg FloorConfig) (int64, error) {
	cfg.Listener = nil
	if err := cfg.normalize(); err != nil {
		return 0, err
	}
	if err := RaiseNoFileLimit(cfg.Conns + floorSpareFDs); err != nil {
		return 0, err
	}
	limit := floorDialWindow + floorAcceptTimeout + 2*time.Duration(cfg.totalTicks()+1)*cfg.Interval + 30*time.Second
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	var (
		mu    sync.Mutex // guards conns, first
		conns []net.Conn
		first error
		total atomic.Int64
		wg    sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		mu.Lock()
		for _, c := range conns {
			_ = c.SetDeadline(time.Now())
		}
		mu.Unlock()
	}()
	read := func(i int, c net.Conn) {
		buf := make([]byte, bufSize)
		var n int64
		defer func() { total.Add(n) }()
		for {
			m, err := c.Read(buf)
			n += int64(m)
			if err == io.EOF {
				return
			}
			if err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("connection %d: read: %w", i, err))
				}
				return
			}
		}
	}

	const par = 64
	sem := make(chan struct{}, par)
	dialUntil := time.Now().Add(floorDialWindow)
	for i := range cfg.Conns {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			c, err := floorDial(ctx, cfg.Addr, dialUntil)
			<-sem
			if err != nil {
				if ctx.Err() == nil {
					fail(fmt.Errorf("dial connection %d to %s: %w", i, cfg.Addr, err))
				}
				return
			}
			mu.Lock()
			if ctx.Err() != nil {
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			read(i, c)
		})
	}
	wg.Wait()
	ctxErr := ctx.Err() // nil when every connection ended by EOF
	cancel()
	<-stopped
	for _, c := range conns {
		c.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return total.Load(), first
	}
	return total.Load(), ctxErr
}

// floorDial dials addr, retrying until the deadline while the connection is
// refused (the writer not listening yet).
func floorDial(ctx context.Context, addr string, until time.Time) (net.Conn, error) {
	var d net.Dialer
	for {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || time.Now().After(until) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
