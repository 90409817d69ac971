package worker

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testConfig is a worker on a port below the ephemeral range: tests that
// kill and restart it on the same port must not find it taken meanwhile
// (testutil.RestartablePortRun).
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	return testcfg.Load(t, map[string]any{"port": testutil.RestartablePortRun(t, 1), "log_level": "warn"})
}

func chat(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`))
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestActionsFollowTheLifecycle(t *testing.T) {
	w := New(testConfig(t), Options{})
	ctx := context.Background()
	if s := w.State(); s != StateStarting {
		t.Errorf("state before Start = %s", s)
	}
	if err := w.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Kill before Start = %v", err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	url := w.URL()
	if chat(t, url) != 200 {
		t.Fatal("no chat after Start")
	}
	if err := w.Kill(); err != nil || w.State() != StateKilled {
		t.Fatalf("Kill = %v, state %s", err, w.State())
	}
	if chat(t, url) != 0 {
		t.Error("a killed worker answered")
	}
	for name, act := range map[string]func() error{
		"drain": w.Drain, "pause": func() error { return w.Pause(ctx, false) },
		"slow": func() error { d := time.Millisecond; return w.Slow(ctx, Slowdown{ExtraPassDelay: &d}) },
	} {
		if err := act(); !errors.Is(err, ErrNotRunning) {
			t.Errorf("%s on a killed worker = %v", name, err)
		}
	}
	if err := w.Kill(); err != nil {
		t.Errorf("second Kill = %v", err)
	}
	if err := w.Restart(ctx); err != nil || w.State() != StateRunning || w.URL() != url {
		t.Fatalf("Restart = %v, state %s, url %s (was %s)", err, w.State(), w.URL(), url)
	}
	if chat(t, url) != 200 {
		t.Error("no chat after Restart")
	}
	if err := w.Drain(); err != nil || w.State() != StateDraining || chat(t, url) != 503 {
		t.Errorf("Drain = %v, state %s", err, w.State())
	}
	if err := w.Pause(ctx, false); err != nil || w.State() != StatePaused {
		t.Errorf("Pause = %v, state %s (paused wins over draining)", err, w.State())
	}
	w.Stop()
	w.Stop()
	if s := w.State(); s != StateStopped {
		t.Errorf("state after Stop = %s", s)
	}
	if err := w.Restart(ctx); !errors.Is(err, ErrStopped) {
		t.Errorf("Restart after Stop = %v", err)
	}
}

func TestSlowRejectsBadValues(t *testing.T) {
	w := New(testConfig(t), Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	neg, zero, nan := -time.Millisecond, 0.0, math.NaN()
	for name, s := range map[string]Slowdown{
		"nothing":        {},
		"negative delay": {ExtraPassDelay: &neg},
		"zero ratio":     {SpeedupRatio: &zero},
		"NaN ratio":      {SpeedupRatio: &nan},
	} {
		if err := w.Slow(context.Background(), s); !errors.Is(err, ErrInvalidTiming) {
			t.Errorf("%s: %v, want ErrInvalidTiming", name, err)
		}
	}
}

func TestReleaseRunsOnceOnStop(t *testing.T) {
	released := 0
	w := New(testConfig(t), Options{Release: func() { released++ }})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Kill()
	_ = w.Restart(context.Background())
	w.Stop()
	w.Stop()
	if released != 1 {
		t.Errorf("Release ran %d times", released)
	}
}

// The production gate opens after the startup time on the wall clock, and
// not at all once stopped.
func TestWallClockGate(t *testing.T) {
	opened := make(chan struct{})
	wallClockGate(time.Millisecond, func() { close(opened) })
	select {
	case <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("gate never opened")
	}
	stop := wallClockGate(50*time.Millisecond, func() { t.Error("stopped gate opened") })
	stop()
	time.Sleep(100 * time.Millisecond)
}
