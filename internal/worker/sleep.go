package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// Sleep mode (docs/sleep-mode.md). vLLM serves POST /sleep, POST /wake_up
// and GET /is_sleeping only in dev mode (VLLM_SERVER_DEV_MODE=1; its
// vllm/entrypoints/serve/sleep/api_router.py attaches the router only
// then), outside /v1 and so outside --api-key. The worker routes them
// beside the API, as it routes /ui, and carries them out on every DP
// rank's engine.

// ErrSleep wraps a sleep or wake-up the worker refuses (bad level, mode or
// tag, or sleep mode off).
var ErrSleep = errors.New("invalid sleep request")

// SleepStatus is a worker's sleep state: its ranks' combined.
type SleepStatus struct {
	// Sleeping is vLLM's is_sleeping: some rank sleeps.
	Sleeping bool `json:"is_sleeping"`
	// Level is the deepest level among the sleeping ranks.
	Level int `json:"sleep_level"`
	// Waking: a wake-up is in progress (the weights are reloading).
	Waking bool `json:"waking"`
}

// Sleep puts every rank to sleep at level with mode (engine.Core.Sleep):
// level 0 pauses scheduling, 1 also discards the KV cache (weights kept
// in host memory), 2 discards both.
func (w *Worker) Sleep(ctx context.Context, level int, mode engine.SleepMode) error {
	engines, err := w.runningEngines()
	if err != nil {
		return err
	}
	return sleepEngines(ctx, engines, level, mode)
}

// WakeUp wakes every rank's memory named by tags (nil: all) and returns
// once the slowest rank has reloaded its weights.
func (w *Worker) WakeUp(ctx context.Context, tags []string) error {
	engines, err := w.runningEngines()
	if err != nil {
		return err
	}
	return wakeEngines(ctx, engines, tags)
}

// SleepStatus returns the worker's sleep state; a worker that is not
// running is awake.
func (w *Worker) SleepStatus() SleepStatus {
	engines, err := w.runningEngines()
	if err != nil {
		return SleepStatus{}
	}
	return sleepStatus(engines)
}

// runningEngines returns the current instance's engines. The lock is not
// held while they act: a wake-up takes seconds, and kill must not wait
// for it.
func (w *Worker) runningEngines() ([]*engine.Engine, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.checkRunning(); err != nil {
		return nil, err
	}
	return w.inst.engines, nil
}

func sleepEngines(ctx context.Context, engines []*engine.Engine, level int, mode engine.SleepMode) error {
	for _, e := range engines {
		if err := e.Sleep(ctx, level, mode); err != nil {
			return sleepError(err)
		}
	}
	return nil
}

// wakeEngines wakes the ranks in parallel: each reloads its own weights.
func wakeEngines(ctx context.Context, engines []*engine.Engine, tags []string) error {
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() { errs[i] = e.WakeUp(ctx, tags) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return sleepError(err)
		}
	}
	return nil
}

// sleepError marks the engine's refusals as ErrSleep. The engine knows no
// flags, so a worker without sleep mode says here which one turns it on.
func sleepError(err error) error {
	if errors.Is(err, engine.ErrSleepDisabled) {
		return fmt.Errorf("%w: %w (start the worker with --enable-sleep-mode)", ErrSleep, err)
	}
	if errors.Is(err, engine.ErrSleepMode) {
		return fmt.Errorf("%w: %w", ErrSleep, err)
	}
	return err
}

func sleepStatus(engines []*engine.Engine) SleepStatus {
	var s SleepStatus
	for _, e := range engines {
		st := e.SleepStatus()
		if st.Sleeping {
			s.Sleeping = true
			s.Level = max(s.Level, st.Level)
		}
		if !st.WakeDue.IsZero() {
			s.Waking = true
		}
	}
	return s
}

// ParseSleepQuery reads /sleep's query as vLLM does: level (default 1)
// and mode (default abort).
func ParseSleepQuery(q url.Values) (int, engine.SleepMode, error) {
	level := 1
	if v := q.Get("level"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, "", fmt.Errorf("%w: level must be an integer (0, 1 or 2), got %q", ErrSleep, v)
		}
		level = n
	}
	mode := engine.SleepAbort
	if v := q.Get("mode"); v != "" {
		mode = engine.SleepMode(v)
	}
	return level, mode, nil
}

// ParseWakeQuery reads /wake_up's repeated tags parameter; none means all.
func ParseWakeQuery(q url.Values) []string {
	tags := q["tags"]
	if len(tags) == 0 {
		return nil
	}
	return tags
}

// Bodies of the sleep routes' answers outside the API's router, in
// FastAPI's shapes.
var (
	bodyMethodNotAllowed = []byte(`{"detail":"Method Not Allowed"}`)
	bodyAsleep           = []byte(`{"is_sleeping":true}`)
	bodyAwake            = []byte(`{"is_sleeping":false}`)
)

// sleepTimeout bounds a wake-up a client does not bound itself: longer
// than any modeled reload (a TB of weights from a slow disk).
const sleepTimeout = time.Hour

// sleepRoutes serves /sleep, /wake_up and /is_sleeping for the instance's
// engines and passes every other path to rest.
// Each sleep and wake-up is logged at info level with how long it took, as
// vLLM logs "It took … seconds to fall asleep / wake up tags …".
// vLLM's sleep routes are FastAPI routes, so obs (when set) counts them in
// the HTTP metrics under their path, inside CORS as on the API routes; a
// wrong method matches no route there (handler "none").
func sleepRoutes(rest http.Handler, engines []*engine.Engine, log *slog.Logger, obs api.HTTPInstrumenter) http.Handler {
	var inner http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serveSleep(w, r, engines, log)
	})
	if obs != nil {
		inner = obs.InstrumentHTTP(inner, func(r *http.Request) string {
			if r.Method == sleepMethod(r.URL.Path) {
				return r.URL.Path
			}
			return ""
		})
	}
	// CORS as on every API route (vLLM's middleware covers these too).
	sleep := api.CORS(inner)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sleep", "/wake_up", "/is_sleeping":
			sleep.ServeHTTP(w, r)
		default:
			rest.ServeHTTP(w, r)
		}
	})
}

// sleepMethod is the method of a sleep route.
func sleepMethod(path string) string {
	if path == "/is_sleeping" {
		return http.MethodGet
	}
	return http.MethodPost
}

// serveSleep answers one of the sleep routes.
func serveSleep(w http.ResponseWriter, r *http.Request, engines []*engine.Engine, log *slog.Logger) {
	method := sleepMethod(r.URL.Path)
	if r.Method != method {
		w.Header().Set("Allow", method)
		httperr.Write(w, http.StatusMethodNotAllowed, bodyMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sleepTimeout)
	defer cancel()
	var err error
	start := time.Now()
	switch r.URL.Path {
	case "/is_sleeping":
		body := bodyAwake
		if sleepStatus(engines).Sleeping {
			body = bodyAsleep
		}
		httperr.Write(w, http.StatusOK, body)
		return
	case "/sleep":
		var level int
		var mode engine.SleepMode
		level, mode, err = ParseSleepQuery(r.URL.Query())
		if err == nil {
			err = sleepEngines(ctx, engines, level, mode)
		}
		if err == nil {
			log.Info("fell asleep", "level", level, "mode", mode, "took", time.Since(start))
		}
	case "/wake_up":
		tags := ParseWakeQuery(r.URL.Query())
		err = wakeEngines(ctx, engines, tags)
		if err == nil {
			log.Info("woke up", "tags", tags, "took", time.Since(start))
		}
	}
	writeSleepResult(w, r, err)
}

// writeSleepResult answers a sleep or wake-up: 200 with no body, as vLLM's
// Response(status_code=200); a refusal is a 400 in vLLM's error shape; an
// engine that stopped is a 503.
func writeSleepResult(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case err == nil:
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
	case errors.Is(err, ErrSleep):
		httperr.Write(w, http.StatusBadRequest, httperr.Nested(http.StatusBadRequest, "BadRequestError", err.Error(), ""))
	case r.Context().Err() != nil:
		// The client is gone.
	default:
		httperr.Write(w, http.StatusServiceUnavailable,
			httperr.Nested(http.StatusServiceUnavailable, "ServiceUnavailableError", err.Error(), ""))
	}
}
