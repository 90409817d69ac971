package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// DefaultTraceBlockSize is the block size of Mooncake's published traces:
// each hash id stands for 512 prompt tokens.
const DefaultTraceBlockSize = 512

// DefaultMaxLineTokens bounds input_length and output_length of one trace
// line: 16 Mi tokens (a 64 MiB prompt) is far beyond any model's context,
// and keeps a line such as input_length 1e12 a clear error instead of an
// allocation that kills the process.
const DefaultMaxLineTokens = 1 << 24

// maxLineBytes bounds one trace line, so that a file that is not JSONL (or
// has no newlines) is an error instead of an ever-growing buffer.
const maxLineBytes = 16 << 20

// TraceOptions shapes how a Mooncake trace is read. The zero value reads
// every line at its recorded times with 512-token blocks.
type TraceOptions struct {
	// BlockSize is the number of tokens per hash id (0 = 512).
	BlockSize int
	// TimeScale multiplies every timestamp: 0.5 replays twice as fast,
	// 2 half as fast (0 = 1).
	TimeScale float64
	// MaxRequests stops after this many requests (0 = all).
	MaxRequests int
	// SkipBadLines skips malformed lines (counting them) instead of failing.
	SkipBadLines bool
	// MaxLineTokens bounds input_length and output_length
	// (0 = DefaultMaxLineTokens); a line beyond it is malformed. Checked
	// before anything is allocated for the line.
	MaxLineTokens int
}

// LineError is a malformed trace line.
type LineError struct {
	Name string // the trace's name, e.g. its path
	Line int    // 1-based
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// MooncakeSource streams a Mooncake JSONL trace: one request per line with
// "timestamp" (ms), "input_length", "output_length" and "hash_ids" (one id
// per block of the prompt; equal ids are equal content). Only the current
// line is held in memory, so a trace of any size can be replayed.
type MooncakeSource struct {
	name    string
	opts    TraceOptions
	scanner *bufio.Scanner
	line    int
	count   int
	lastTS  float64
	skipped int
	scratch []uint32
}

// NewMooncakeSource reads a trace from r; name labels errors.
func NewMooncakeSource(r io.Reader, name string, opts TraceOptions) (*MooncakeSource, error) {
	if opts.BlockSize == 0 {
		opts.BlockSize = DefaultTraceBlockSize
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 1
	}
	if opts.BlockSize < 0 {
		return nil, fmt.Errorf("trace block size must be positive, got %d", opts.BlockSize)
	}
	if opts.TimeScale < 0 || math.IsInf(opts.TimeScale, 0) || math.IsNaN(opts.TimeScale) {
		return nil, fmt.Errorf("time scale must be a positive number, got %g", opts.TimeScale)
	}
	if opts.MaxLineTokens == 0 {
		opts.MaxLineTokens = DefaultMaxLineTokens
	}
	if opts.MaxLineTokens < 0 {
		return nil, fmt.Errorf("max line tokens must be positive, got %d", opts.MaxLineTokens)
	}
	if opts.MaxRequests < 0 {
		return nil, fmt.Errorf("max requests must be ≥ 0, got %d", opts.MaxRequests)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	return &MooncakeSource{name: name, opts: opts, scanner: sc, lastTS: math.Inf(-1)}, nil
}

// Skipped returns the number of malformed lines skipped so far.
func (s *MooncakeSource) Skipped() int { return s.skipped }

// mooncakeLine is one trace record; pointers tell a missing field from 0.
type mooncakeLine struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int     `json:"input_length"`
	OutputLength *int     `json:"output_length"`
	HashIDs      []int64  `json:"hash_ids"`
}

// Next returns the next request, io.EOF at the end, or a *LineError.
func (s *MooncakeSource) Next() (Request, error) {
	for {
		if s.opts.MaxRequests > 0 && s.count >= s.opts.MaxRequests {
			return Request{}, io.EOF
		}
		if !s.scanner.Scan() {
			if err := s.scanner.Err(); err != nil {
				if errors.Is(err, bufio.ErrTooLong) {
					err = fmt.Errorf("line longer than %d MiB (is this a JSONL trace?)", maxLineBytes>>20)
				}
				return Request{}, &LineError{Name: s.name, Line: s.line + 1, Err: err}
			}
			return Request{}, io.EOF
		}
		s.line++
		text := bytes.TrimSpace(s.scanner.Bytes())
		if len(text) == 0 {
			continue // blank lines (a trailing newline) are not requests
		}
		req, err := s.parse(text)
		if err != nil {
			if s.opts.SkipBadLines {
				s.skipped++
				continue
			}
			return Request{}, &LineError{Name: s.name, Line: s.line, Err: err}
		}
		s.count++
		return req, nil
	}
}

// parse checks one line and builds its request.
func (s *MooncakeSource) parse(text []byte) (Request, error) {
	var l mooncakeLine
	if err := json.Unmarshal(text, &l); err != nil {
		return Request{}, fmt.Errorf("not a JSON object: %w", err)
	}
	switch {
	case l.Timestamp == nil:
		return Request{}, errors.New(`missing "timestamp"`)
	case l.InputLength == nil:
		return Request{}, errors.New(`missing "input_length"`)
	case l.OutputLength == nil:
		return Request{}, errors.New(`missing "output_length"`)
	}
	ts, in, out := *l.Timestamp, *l.InputLength, *l.OutputLength
	bs := s.opts.BlockSize
	switch {
	case ts < 0 || math.IsNaN(ts) || math.IsInf(ts, 0):
		return Request{}, fmt.Errorf("timestamp must be a finite number ≥ 0, got %g", ts)
	case ts < s.lastTS:
		return Request{}, fmt.Errorf("timestamp %g ms is earlier than the previous request's %g ms (sort the trace by timestamp)", ts, s.lastTS)
	case in < 1:
		return Request{}, fmt.Errorf("input_length must be ≥ 1, got %d", in)
	case out < 1:
		return Request{}, fmt.Errorf("output_length must be ≥ 1, got %d (a request that generates nothing has no TTFT)", out)
	case in > s.opts.MaxLineTokens:
		return Request{}, fmt.Errorf("input_length %d is over the limit of %d tokens per line", in, s.opts.MaxLineTokens)
	case out > s.opts.MaxLineTokens:
		return Request{}, fmt.Errorf("output_length %d is over the limit of %d tokens per line", out, s.opts.MaxLineTokens)
	case len(l.HashIDs) > (in+bs-1)/bs:
		return Request{}, fmt.Errorf("%d hash_ids but input_length %d covers only %d blocks of %d tokens (wrong --trace-block-size?)",
			len(l.HashIDs), in, (in+bs-1)/bs, bs)
	}
	for _, id := range l.HashIDs {
		if id < 0 {
			return Request{}, fmt.Errorf("hash_ids must be ≥ 0, got %d", id)
		}
	}
	s.lastTS = ts
	return Request{
		Index:        s.count,
		Arrival:      time.Duration(math.Round(ts * s.opts.TimeScale * float64(time.Millisecond))),
		Prompt:       traceTokens(l.HashIDs, in, bs, uint64(s.count)),
		OutputTokens: out,
	}, nil
}

// traceTokens builds a prompt of n tokens from a trace's hash ids: block i
// holds the tokens of content id ids[i]; tokens past the last id are unique
// to the request.
func traceTokens(ids []int64, n, blockSize int, request uint64) []uint32 {
	p := make([]uint32, 0, n)
	for _, id := range ids {
		p = blockTokens(p, uint64(id), min(blockSize, n-len(p)))
	}
	if rest := n - len(p); rest > 0 {
		// Unique content: ids from the top half of the space, never in a trace.
		p = blockTokens(p, 1<<63|request, rest)
	}
	return p
}

// TraceEnd returns the scaled timestamp of the last request of a trace
// file, read from its tail, for a progress bar's total; 0 when it cannot
// tell (not a regular file, a malformed last line).
func TraceEnd(path string, timeScale float64) time.Duration {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	const tail = 1 << 20
	off := max(0, st.Size()-tail)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return 0
	}
	lines := bytes.Split(bytes.TrimSpace(buf), []byte("\n"))
	var l mooncakeLine
	if err := json.Unmarshal(lines[len(lines)-1], &l); err != nil || l.Timestamp == nil {
		return 0
	}
	if timeScale == 0 {
		timeScale = 1
	}
	return time.Duration(*l.Timestamp * timeScale * float64(time.Millisecond))
}
