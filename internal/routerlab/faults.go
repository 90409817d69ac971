package routerlab

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FaultStep is one scripted admin action: at At after the run's start,
// apply Action (an admin action of docs/fleet.md: kill, restart, drain,
// undrain, pause, resume, slow, reset_prefix_cache) to Worker with Body.
type FaultStep struct {
	At     time.Duration   `json:"-"`
	Worker string          `json:"worker"`
	Action string          `json:"action"`
	Body   json.RawMessage `json:"body,omitempty"`
}

var faultActions = []string{"kill", "restart", "drain", "undrain", "pause", "resume", "slow", "reset_prefix_cache"}

// ParseFaults reads a fault schedule: one step a line,
//
//	AT WORKER ACTION [JSON-BODY]
//
// with AT a Go duration from the run's start (wall clock, after
// --time-scale), e.g. "60s 3 kill", "90s 3 restart",
// `30s 1 slow {"extra_pass_delay_ms": 50}`. Blank lines and lines starting
// with # are ignored. Steps are applied in time order.
func ParseFaults(r io.Reader, name string) ([]FaultStep, error) {
	var steps []FaultStep
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.SplitN(text, " ", 4)
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...))
		}
		if len(fields) < 3 {
			return nil, bad("want AT WORKER ACTION [JSON-BODY], got %q", text)
		}
		at, err := time.ParseDuration(fields[0])
		if err != nil || at < 0 {
			return nil, bad("time %q is not a duration ≥ 0 (e.g. 60s)", fields[0])
		}
		if _, err := strconv.Atoi(fields[1]); err != nil {
			return nil, bad("worker %q is not an admin id (0, 1, …)", fields[1])
		}
		if !slices.Contains(faultActions, fields[2]) {
			return nil, bad("unknown action %q (want one of %v)", fields[2], faultActions)
		}
		step := FaultStep{At: at, Worker: fields[1], Action: fields[2]}
		if len(fields) == 4 {
			body := strings.TrimSpace(fields[3])
			if !json.Valid([]byte(body)) {
				return nil, bad("body %q is not JSON", body)
			}
			step.Body = json.RawMessage(body)
		}
		steps = append(steps, step)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	slices.SortStableFunc(steps, func(a, b FaultStep) int { return int(a.At - b.At) })
	return steps, nil
}

// AppliedFault is a step as it was applied.
type AppliedFault struct {
	FaultStep
	// AtS is the scheduled time, SentS when the admin call was made and
	// AppliedS when the admin API answered, seconds from the start: the
	// action took effect in between.
	AtS      float64 `json:"at_s"`
	SentS    float64 `json:"sent_s"`
	AppliedS float64 `json:"applied_s"`
	Error    string  `json:"error,omitempty"`
}

// applyFaults runs the schedule against the admin API until ctx ends.
func applyFaults(ctx context.Context, a *admin, steps []FaultStep, start time.Time, record func(AppliedFault)) {
	for _, st := range steps {
		t := time.NewTimer(time.Until(start.Add(st.At)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var body []byte
		if len(st.Body) > 0 {
			body = st.Body
		}
		sent := time.Since(start).Seconds()
		err := a.call(ctx, http.MethodPost, "/workers/"+st.Worker+"/"+st.Action, body, nil)
		af := AppliedFault{FaultStep: st, AtS: st.At.Seconds(), SentS: sent, AppliedS: time.Since(start).Seconds()}
		if err != nil {
			af.Error = err.Error()
		}
		record(af)
	}
}
