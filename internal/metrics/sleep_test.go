package metrics

import (
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// vllm:engine_sleep_state follows each rank's sleep state as vLLM's
// record_sleep_state sets it, and exists only with --enable-sleep-mode.
func TestEngineSleepState(t *testing.T) {
	if f := scrape(t, newReg(testConfig(nil), "test")); f["vllm:engine_sleep_state"] != nil {
		t.Fatal("vllm:engine_sleep_state exported without sleep mode")
	}
	reg := newReg(testConfig(func(c *config.Config) { c.EnableSleepMode = true; c.DPSize = 2 }), "test")
	for _, tc := range []struct {
		name   string
		st     engine.SleepStatus
		states [3]float64 // awake, weights_offloaded, discard_all
	}{
		{"awake", engine.SleepStatus{}, [3]float64{1, 0, 0}},
		{"level 0", engine.SleepStatus{Sleeping: true}, [3]float64{0, 0, 0}},
		{"level 1", engine.SleepStatus{Sleeping: true, Level: 1, Weights: true, KVCache: true}, [3]float64{0, 1, 0}},
		{"level 2", engine.SleepStatus{Sleeping: true, Level: 2, Weights: true, KVCache: true}, [3]float64{0, 0, 1}},
		{"level 2, weights back", engine.SleepStatus{Sleeping: true, Level: 2, KVCache: true}, [3]float64{0, 0, 0}},
	} {
		reg.Observer(1).ObserveGauges(engine.Gauges{Rank: 1, Sleep: tc.st})
		f := scrape(t, reg)
		for i, s := range sleepStates {
			if got := f.value(t, "vllm:engine_sleep_state", "engine", "1", "model_name", "mocker-model", "sleep_state", s); got != tc.states[i] {
				t.Errorf("%s: rank 1 %s = %v, want %v", tc.name, s, got, tc.states[i])
			}
		}
		if got := f.value(t, "vllm:engine_sleep_state", "engine", "0", "sleep_state", "awake"); got != 1 {
			t.Errorf("%s: rank 0 awake = %v", tc.name, got)
		}
	}
}
