package worker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The operator's sleep actions follow the worker's lifecycle, refuse a
// worker without sleep mode, and the live view's stream shows a sleeping
// rank with its emptied pool.
func TestSleep_ActionsAndTheLiveView(t *testing.T) {
	ctx := context.Background()
	off := New(testConfig(t), Options{})
	if err := off.Sleep(ctx, 1, engine.SleepAbort); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Sleep before Start = %v", err)
	}
	if err := off.Start(); err != nil {
		t.Fatal(err)
	}
	defer off.Stop()
	if err := off.Sleep(ctx, 1, engine.SleepAbort); !errors.Is(err, ErrSleep) || !errors.Is(err, engine.ErrSleepDisabled) {
		t.Errorf("Sleep without sleep mode = %v", err)
	}

	cfg := testConfig(t)
	cfg.EnableSleepMode, cfg.SleepWeightsGB = true, 0 // an instant wake-up
	w := New(cfg, Options{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	defer http.DefaultClient.CloseIdleConnections()
	if chat(t, w.URL()) != 200 {
		t.Fatal("chat failed")
	}
	if err := w.Sleep(ctx, 2, engine.SleepAbort); err != nil {
		t.Fatal(err)
	}
	if s := w.SleepStatus(); !s.Sleeping || s.Level != 2 || s.Waking {
		t.Errorf("SleepStatus = %+v", s)
	}
	// The routes exist only in dev mode.
	res, err := http.Get(w.URL() + "/is_sleeping")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("/is_sleeping without dev mode = %d", res.StatusCode)
	}
	type rank struct {
		Sleeping   bool `json:"sleeping"`
		SleepLevel int  `json:"sleep_level"`
		InUse      int  `json:"in_use"`
		Cached     int  `json:"cached"`
	}
	first := func() rank {
		res, err := http.Get(w.URL() + "/ui/stream?view=engine")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		line, err := bufio.NewReader(res.Body).ReadString('\n')
		var v struct{ Ranks []rank }
		if err != nil || json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v) != nil || len(v.Ranks) != 1 {
			t.Fatalf("stream: %q %v", line, err)
		}
		return v.Ranks[0]
	}
	testutil.WaitFor(t, 5*time.Second, "the live view showing the sleep", func() bool {
		r := first()
		return r.Sleeping && r.SleepLevel == 2 && r.InUse == 0 && r.Cached == 0
	})
	if err := w.WakeUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if s := w.SleepStatus(); s.Sleeping {
		t.Errorf("SleepStatus after WakeUp = %+v", s)
	}
	testutil.WaitFor(t, 5*time.Second, "the live view showing the wake-up", func() bool { return !first().Sleeping })
	if chat(t, w.URL()) != 200 {
		t.Error("no chat after the wake-up")
	}
}
