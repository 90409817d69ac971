// Package testcfg loads server configurations for tests the way the
// command line does, without the machine's environment. It is a package of
// its own, not part of testutil, because it imports internal/config, whose
// own tests import testutil.
//
// It is imported only from _test.go files.
package testcfg

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// Hostname is the host name every test configuration sees (it is part of
// the default worker_id).
const Hostname = "testhost"

// Options returns load options for overlay: its values as a configuration
// file or flags give them (numbers as json.Number, which the loader
// requires, in nested maps and lists alike), no environment variables, and
// Hostname as the host name. An overlay that is not JSON is a bug in the
// test: it panics.
func Options(overlay map[string]any) config.LoadOptions {
	b, err := json.Marshal(overlay)
	if err != nil {
		panic("testcfg: overlay: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var o map[string]any
	if err := dec.Decode(&o); err != nil {
		panic("testcfg: overlay: " + err.Error())
	}
	if o == nil {
		o = map[string]any{}
	}
	return config.LoadOptions{
		Overlay:   o,
		LookupEnv: func(string) (string, bool) { return "", false },
		Hostname:  func() (string, error) { return Hostname, nil },
	}
}

// Load loads the configuration of overlay over the test defaults — no
// simulated delay (speedup_ratio inf) and exact lengths
// (output_len_mode max) unless overlay sets them — failing the test when
// it does not load.
//
// The server's default mode is natural (answers end at a seeded length
// below max_tokens); most tests were written when every answer with a
// max_tokens was exactly that long, and pin outputs, token counts and
// schedules that depend on it, so they state that mode here. A test of
// natural lengths sets output_len_mode "natural" itself.
func Load(t testing.TB, overlay map[string]any) *config.Config {
	t.Helper()
	o := map[string]any{"speedup_ratio": "inf", "output_len_mode": "max"}
	maps.Copy(o, overlay)
	cfg, _, err := config.Load(Options(o))
	if err != nil {
		t.Fatalf("testcfg: config: %v", err)
	}
	return cfg
}
