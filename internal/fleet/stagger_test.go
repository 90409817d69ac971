package fleet

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// Worker i starts i·delay after worker 0, and the admin API lists the
// workers still waiting as "starting".
func TestStaggeredStart(t *testing.T) {
	const delay = 150 * time.Millisecond
	members, _, err := Plan(Spec{Workers: 3, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	readyAt := map[int]time.Time{}
	adminURL := make(chan string, 1)
	started := make(chan *Fleet, 1)
	go func() {
		f, err := Start(context.Background(), members, Options{AdminAddr: "127.0.0.1:0", StaggerDelay: delay,
			AdminReady: func(u string) { adminURL <- u },
			WorkerReady: func(i int, _ string) {
				mu.Lock()
				readyAt[i] = time.Now()
				mu.Unlock()
			}})
		if err != nil {
			t.Error(err)
		}
		started <- f
	}()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	_, list := adminCall(t, client, http.MethodGet, <-adminURL+"/workers", "", "")
	states := []string{}
	for _, w := range list.([]any) {
		states = append(states, w.(map[string]any)["state"].(string))
	}
	if states[2] != "starting" {
		t.Errorf("states right after the start = %v, want worker 2 still starting", states)
	}
	f := <-started
	if f == nil {
		t.FailNow()
	}
	defer f.Stop()
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < 3; i++ {
		if gap := readyAt[i].Sub(readyAt[0]); gap < time.Duration(i)*delay-20*time.Millisecond {
			t.Errorf("worker %d ready %v after worker 0, want about %v", i, gap, time.Duration(i)*delay)
		}
	}
	for i := range 3 {
		if s := f.Worker(i).State(); s != "running" {
			t.Errorf("worker %d is %s after Start", i, s)
		}
	}
}

// Cancelling during the stagger stops what was started.
func TestStaggeredStartCancelled(t *testing.T) {
	members, _, err := Plan(Spec{Workers: 3, Base: testLoadOptions(map[string]any{"log_level": "warn"})})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if err := Run(ctx, members, Options{StaggerDelay: time.Second}); err != nil {
		t.Errorf("Run = %v, want nil after a cancel", err)
	}
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Errorf("Run took %v after a cancel during the stagger", d)
	}
}
