package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestLoad_SleepModeReachesTheEngine(t *testing.T) {
	cfg, warns := mustLoad(t, noEnv(flagOptions(t, "--enable-sleep-mode", "--sleep-weights-gb", "140", "--sleep-host-bandwidth", "50")))
	if len(warns) != 0 {
		t.Errorf("warnings: %q", warns)
	}
	want := engine.SleepConfig{Enabled: true, WeightBytes: 140e9, HostBandwidth: 50e9, DiskBandwidth: 3e9}
	if got := cfg.EngineConfig(nil).Sleep; got != want {
		t.Errorf("engine sleep config = %+v, want %+v", got, want)
	}
	// --no-enable-sleep-mode, vLLM's negation, turns it off again.
	cfg, _ = mustLoad(t, noEnv(flagOptions(t, "--enable-sleep-mode", "--no-enable-sleep-mode")))
	if cfg.EnableSleepMode || cfg.EngineConfig(nil).Sleep.Enabled {
		t.Error("--no-enable-sleep-mode left sleep mode on")
	}
}

func TestLoad_SleepKeysWithoutSleepModeWarn(t *testing.T) {
	cfg, warns := mustLoad(t, noEnv(flagOptions(t, "--sleep-weights-gb", "70", "--sleep-disk-bandwidth", "1")))
	if cfg.EngineConfig(nil).Sleep.Enabled {
		t.Fatal("sleep mode on without --enable-sleep-mode")
	}
	want := []string{
		"sleep_weights_gb applies only with --enable-sleep-mode; ignored",
		"sleep_disk_bandwidth applies only with --enable-sleep-mode; ignored",
	}
	for _, w := range want {
		if !slices.Contains(warns, w) {
			t.Errorf("missing warning %q in %q", w, warns)
		}
	}
	probs := loadProblems(t, flagOptions(t, "--enable-sleep-mode", "--sleep-weights-gb", "-1", "--sleep-host-bandwidth", "-2"))
	joined := strings.Join(probs, "\n")
	for _, k := range []string{"--sleep-weights-gb must be a finite number >= 0", "--sleep-host-bandwidth must be a finite number >= 0"} {
		if !strings.Contains(joined, k) {
			t.Errorf("problems %q lack %q", probs, k)
		}
	}
}
