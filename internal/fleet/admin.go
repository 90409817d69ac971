package fleet

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/mocker-server/mocker-server/internal/faults"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/ui"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// Action is an operator action of the admin API.
type Action string

// The admin actions (docs/fleet.md).
const (
	ActionKill             Action = "kill"
	ActionRestart          Action = "restart"
	ActionDrain            Action = "drain"
	ActionUndrain          Action = "undrain"
	ActionPause            Action = "pause"
	ActionResume           Action = "resume"
	ActionSlow             Action = "slow"
	ActionResetPrefixCache Action = "reset_prefix_cache"
	ActionSleep            Action = "sleep"   // ?level=0|1|2&mode=abort|wait|keep (docs/sleep-mode.md)
	ActionWakeUp           Action = "wake_up" // ?tags=weights&tags=kv_cache (none: all)
)

var actions = map[Action]bool{ActionKill: true, ActionRestart: true, ActionDrain: true,
	ActionUndrain: true, ActionPause: true, ActionResume: true, ActionSlow: true,
	ActionResetPrefixCache: true, ActionSleep: true, ActionWakeUp: true}

// actionTimeout bounds an action that waits on an engine (a pass in
// flight finishes first).
const actionTimeout = 30 * time.Second

// wakeTimeout bounds a wake-up, whose modeled weight reload can outlast
// actionTimeout, and a sleep that waits for the running requests.
const wakeTimeout = time.Hour

// maxActionBody bounds an action's JSON body.
const maxActionBody = 1 << 16

// adminHandler routes the admin API, every route behind the admin key.
func (f *Fleet) adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /workers", f.handleList)
	mux.HandleFunc("GET /workers/{id}", f.handleGet)
	mux.HandleFunc("GET /workers/{id}/engine", f.handleEngine)
	mux.HandleFunc("POST /workers/{id}/{action}", f.handleAction)
	// Any other method on an action route: 405 with Allow, not the 404
	// of the catch-all below.
	mux.HandleFunc("/workers/{id}/{action}", f.handleWrongMethod)
	for _, m := range []string{"GET", "PUT", "POST"} {
		mux.HandleFunc(m+" /workers/{id}/faults", f.handleFaults)
	}
	mux.Handle("GET /metrics", f.metrics.handler())
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		adminError(w, http.StatusNotFound, "NotFoundError", "no such admin route")
	})
	var keys []string
	if f.opts.AdminKey != "" {
		keys = []string{f.opts.AdminKey}
	}
	// The live view checks the admin key itself: a browser cannot send a
	// Bearer header on its event stream (docs/ui.md).
	uiHandler := f.uiHandler(keys)
	guarded := guardBody(mux)
	if f.opts.AdminKey == "" {
		return ui.Route(guarded, uiHandler)
	}
	key := []byte("Bearer " + f.opts.AdminKey)
	return ui.Route(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), key) != 1 {
			// Answered before the body is read, and the connection
			// closed (closeUnread): net/http would otherwise read up to
			// 256 KiB of an unread body, before or after the answer, so a
			// slow body would hold the 401 back or the connection open.
			closeUnread(w)
			httperr.Write(w, http.StatusUnauthorized, httperr.Flat("Unauthorized"))
			return
		}
		guarded.ServeHTTP(w, r)
	}), uiHandler)
}

// WorkerInfo is one worker in the admin listing.
type WorkerInfo struct {
	ID       string `json:"id"`
	WorkerID string `json:"worker_id"`
	URL      string `json:"url"`
	HTTPPort int    `json:"http_port"`
	// GRPCAddr is the worker's gRPC address (host:port) under
	// --grpc-port, "" otherwise or before it is bound.
	GRPCAddr string       `json:"grpc_addr"`
	State    worker.State `json:"state"`
	// Health is what GET /health answers: "ok", "failing" (paused with
	// health "fail": 503) or "down" (not listening: starting, killed or
	// stopped).
	Health string `json:"health"`
	// Draining is true while new generation requests answer 503, also
	// when State names something more significant (paused).
	Draining bool `json:"draining"`
	// Slow is the slow actions' timing change since the (re)start; nil
	// when the worker runs at its configured timing.
	Slow       *SlowInfo `json:"slow"`
	Role       string    `json:"role"`
	Model      string    `json:"model"`
	EngineType string    `json:"engine_type"`
	DPSize     int       `json:"dp_size"`
	// Per DP rank; empty when the stream is not configured.
	KVEventsEndpoints []string `json:"kv_events_endpoints"`
	ReplayEndpoints   []string `json:"replay_endpoints"`
	FPMEndpoints      []string `json:"fpm_endpoints"`
	// Sleep is the worker's sleep state (awake unless running).
	Sleep worker.SleepStatus `json:"sleep"`
}

// Info describes worker i.
func (f *Fleet) Info(i int) WorkerInfo {
	m := f.members[i]
	cfg := m.Config
	info := WorkerInfo{ID: m.ID, WorkerID: cfg.WorkerID, HTTPPort: cfg.Port, State: worker.StateStarting,
		Role: string(cfg.WorkerType), Model: cfg.ServedName(), EngineType: string(cfg.EngineType),
		DPSize: max(cfg.DPSize, 1)}
	info.KVEventsEndpoints, info.ReplayEndpoints, info.FPMEndpoints = eventEndpoints(cfg)
	info.Health = "down"
	if w := f.Worker(i); w != nil {
		info.State, info.URL, info.HTTPPort = w.State(), w.URL(), w.Port()
		info.GRPCAddr = w.GRPCAddr()
		c := w.Condition()
		info.Draining = c.Draining
		switch {
		case c.HealthFailing:
			info.Health = "failing"
		case info.State == worker.StateRunning || info.State == worker.StatePaused || info.State == worker.StateDraining:
			info.Health = "ok"
		}
		info.Slow = slowInfo(c)
		info.Sleep = w.SleepStatus()
	}
	return info
}

// SlowInfo is a slowed worker's timing change in the admin listing.
type SlowInfo struct {
	// SpeedupRatio replaces the configured one: a number, "inf", or
	// null when only the delay was set.
	SpeedupRatio any `json:"speedup_ratio"`
	// ExtraPassDelayMs is added to every pass that does work.
	ExtraPassDelayMs float64 `json:"extra_pass_delay_ms"`
}

// slowInfo describes c's slowdown, nil when there is none.
func slowInfo(c worker.Condition) *SlowInfo {
	if !c.Slowed() {
		return nil
	}
	s := &SlowInfo{}
	if r := c.Slow.SpeedupRatio; r != nil {
		s.SpeedupRatio = *r
		if math.IsInf(*r, 1) { // JSON has no infinity; the action accepts "inf"
			s.SpeedupRatio = "inf"
		}
	}
	if d := c.Slow.ExtraPassDelay; d != nil {
		s.ExtraPassDelayMs = float64(*d) / float64(time.Millisecond)
	}
	return s
}

func (f *Fleet) handleList(w http.ResponseWriter, _ *http.Request) {
	list := make([]WorkerInfo, len(f.members))
	for i := range f.members {
		list[i] = f.Info(i)
	}
	writeAdminJSON(w, http.StatusOK, list)
}

func (f *Fleet) handleGet(w http.ResponseWriter, r *http.Request) {
	i, ok := f.lookup(w, r.PathValue("id"))
	if ok {
		writeAdminJSON(w, http.StatusOK, f.Info(i))
	}
}

// lookup finds a worker by admin id, answering 404 when there is none.
func (f *Fleet) lookup(w http.ResponseWriter, id string) (int, bool) {
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(f.members) || strconv.Itoa(i) != id {
		adminError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("no worker %q (ids are 0..%d)", id, len(f.members)-1))
		return 0, false
	}
	return i, true
}

// handleFaults serves a worker's run-time failure settings
// (faults.NewAdminHandler; the admin key was checked already).
func (f *Fleet) handleFaults(w http.ResponseWriter, r *http.Request) {
	i, ok := f.lookup(w, r.PathValue("id"))
	if !ok {
		return
	}
	wk := f.Worker(i)
	if wk == nil || wk.Faults() == nil {
		adminError(w, http.StatusConflict, "ConflictError", "worker has not started yet")
		return
	}
	faults.NewAdminHandler(wk.Faults(), "").ServeHTTP(w, r)
}

// handleWrongMethod answers a method an action route does not take.
func (f *Fleet) handleWrongMethod(w http.ResponseWriter, r *http.Request) {
	if _, ok := f.lookup(w, r.PathValue("id")); !ok {
		return
	}
	action := Action(r.PathValue("action"))
	allow := "POST"
	switch {
	case action == "faults":
		allow = "GET, PUT, POST"
	case action == "engine":
		allow = "GET"
	case !actions[action]:
		adminError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("unknown action %q", action))
		return
	}
	w.Header().Set("Allow", allow)
	adminError(w, http.StatusMethodNotAllowed, "MethodNotAllowedError",
		fmt.Sprintf("%s /workers/{id}/%s: use %s", r.Method, action, allow))
}

func (f *Fleet) handleAction(w http.ResponseWriter, r *http.Request) {
	i, ok := f.lookup(w, r.PathValue("id"))
	if !ok {
		return
	}
	action := Action(r.PathValue("action"))
	if !actions[action] {
		adminError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("unknown action %q", action))
		return
	}
	wk := f.Worker(i)
	if wk == nil {
		adminError(w, http.StatusConflict, "ConflictError", "worker has not started yet")
		return
	}
	body, err := readActionBody(r)
	if err != nil {
		adminError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	timeout := actionTimeout
	if action == ActionWakeUp || action == ActionSleep {
		timeout = wakeTimeout // a modeled reload, or a mode=wait drain, may take longer
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	body.query = r.URL.Query()
	detail, err := f.apply(ctx, wk, action, body)
	if err != nil {
		status, typ := http.StatusConflict, "ConflictError"
		switch {
		case errors.Is(err, errBadBody), errors.Is(err, worker.ErrInvalidTiming), errors.Is(err, worker.ErrSleep):
			status, typ = http.StatusBadRequest, "BadRequestError"
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			status, typ = http.StatusServiceUnavailable, "ServiceUnavailableError"
		}
		f.log.Info("admin action refused", "worker", f.members[i].ID, "action", action, "err", err)
		adminError(w, status, typ, err.Error())
		return
	}
	f.metrics.count(f.members[i].ID, action)
	args := []any{"worker", f.members[i].ID, "action", action, "state", wk.State()}
	if len(detail) > 0 {
		args = append(args, "detail", detail)
	}
	f.log.Info("admin action", args...)
	writeAdminJSON(w, http.StatusOK, f.Info(i))
}

var errBadBody = errors.New("bad request body")

// actionBody is every field an action's JSON body may carry.
type actionBody struct {
	// Health ("ok" or "fail") selects /health's answer while paused.
	Health string `json:"health"`
	// SpeedupRatio is a number or "inf".
	SpeedupRatio     json.RawMessage `json:"speedup_ratio"`
	ExtraPassDelayMs *float64        `json:"extra_pass_delay_ms"`
	// query is the request's query: sleep's level and mode, wake_up's tags,
	// as vLLM's /sleep and /wake_up take them.
	query url.Values
}

func readActionBody(r *http.Request) (actionBody, error) {
	var b actionBody
	raw := new(bytes.Buffer)
	if _, err := raw.ReadFrom(http.MaxBytesReader(nil, r.Body, maxActionBody)); err != nil {
		return b, fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(raw.Bytes())) == 0 {
		return b, nil
	}
	dec := json.NewDecoder(raw)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return b, fmt.Errorf("body: %w", err)
	}
	return b, nil
}

// apply carries out one action; detail describes its parameters for the log.
func (f *Fleet) apply(ctx context.Context, wk *worker.Worker, action Action, b actionBody) (detail string, err error) {
	switch action {
	case ActionKill:
		return "", wk.Kill()
	case ActionRestart:
		return "", wk.Restart(ctx)
	case ActionDrain:
		return "", wk.Drain()
	case ActionUndrain:
		return "", wk.Undrain()
	case ActionPause:
		var fail bool
		switch b.Health {
		case "", "ok":
		case "fail":
			fail = true
		default:
			return "", fmt.Errorf("%w: health must be \"ok\" or \"fail\", got %q", errBadBody, b.Health)
		}
		return "health=" + map[bool]string{false: "ok", true: "fail"}[fail], wk.Pause(ctx, fail)
	case ActionResume:
		return "", wk.Resume(ctx)
	case ActionSlow:
		var s worker.Slowdown
		if len(b.SpeedupRatio) > 0 {
			ratio, err := parseRatio(b.SpeedupRatio)
			if err != nil {
				return "", err
			}
			s.SpeedupRatio = &ratio
			detail += fmt.Sprintf("speedup_ratio=%v ", ratio)
		}
		if ms := b.ExtraPassDelayMs; ms != nil {
			// Checked as a number before it becomes a Duration: 1e300 ms
			// would wrap to a negative Duration and be reported as such.
			if maxMs := float64(worker.MaxExtraPassDelay.Milliseconds()); !(*ms >= 0 && *ms <= maxMs) {
				return "", fmt.Errorf("%w: extra_pass_delay_ms must be a number between 0 and %.0f (a year), got %v",
					errBadBody, maxMs, *ms)
			}
			d := time.Duration(*ms * float64(time.Millisecond))
			s.ExtraPassDelay = &d
			detail += fmt.Sprintf("extra_pass_delay=%v", d)
		}
		return detail, wk.Slow(ctx, s)
	case ActionResetPrefixCache:
		ok, err := wk.ResetPrefixCache(ctx)
		if err == nil && !ok {
			err = errors.New("prefix cache not reset: blocks are in use")
		}
		return "", err
	case ActionSleep:
		level, mode, err := worker.ParseSleepQuery(b.query)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("level=%d mode=%s", level, mode), wk.Sleep(ctx, level, mode)
	case ActionWakeUp:
		tags := worker.ParseWakeQuery(b.query)
		return fmt.Sprintf("tags=%v", tags), wk.WakeUp(ctx, tags)
	}
	return "", fmt.Errorf("unknown action %q", action)
}

// parseRatio accepts a JSON number or the string "inf".
func parseRatio(raw json.RawMessage) (float64, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "inf" {
			return math.Inf(1), nil
		}
		return 0, fmt.Errorf("%w: speedup_ratio must be a number or \"inf\", got %q", errBadBody, s)
	}
	var x float64
	if err := json.Unmarshal(raw, &x); err != nil {
		return 0, fmt.Errorf("%w: speedup_ratio must be a number or \"inf\"", errBadBody)
	}
	return x, nil
}

// adminError answers with the nested error shape the workers use.
func adminError(w http.ResponseWriter, status int, typ, msg string) {
	httperr.Write(w, status, httperr.Nested(status, typ, msg, ""))
}

func writeAdminJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"encoding failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
