package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// No shipped configuration listens on every interface: every server
// configuration in configs/ is loaded, and whatever it binds (HTTP host,
// KV-event and replay endpoints, FPM endpoint) must be loopback or ipc://,
// with no wildcard-bind warning.
func TestConfigs_NoWildcardBinds(t *testing.T) {
	t.Chdir(cfgsRepoRoot)
	paths, err := filepath.Glob("configs/*")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, path := range paths {
		ext := filepath.Ext(path)
		if ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if base := filepath.Base(path); strings.HasPrefix(base, "prometheus") || strings.HasPrefix(base, "profile") {
			continue // Prometheus scrape configs and timing profiles, not server configurations
		}
		checked++
		cfg, warns, err := config.Load(config.LoadOptions{ConfigPath: path, LookupEnv: cfgsNoEnv})
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		for _, w := range warns {
			if strings.Contains(w, "every interface") {
				t.Errorf("%s: %s", path, w)
			}
		}
		var endpoints []string
		if cfg.FPMEndpoint != "" {
			endpoints = append(endpoints, cfg.FPMEndpoint)
		}
		if k := cfg.KVEventsConfig; k != nil && k.EnableKVCacheEvents {
			endpoints = append(endpoints, k.Endpoint)
			if k.ReplayEndpoint != nil {
				endpoints = append(endpoints, *k.ReplayEndpoint)
			}
		}
		for _, ep := range endpoints {
			if !strings.HasPrefix(ep, "ipc://") && !strings.HasPrefix(ep, "inproc://") &&
				!strings.HasPrefix(ep, "tcp://127.0.0.1:") {
				t.Errorf("%s: endpoint %s is not local", path, ep)
			}
		}
		if cfg.Host != "127.0.0.1" {
			t.Errorf("%s: host %s", path, cfg.Host)
		}
		// Comments may mention wildcards; values must not.
		for i, line := range strings.Split(string(raw), "\n") {
			if v, _, _ := strings.Cut(line, "#"); strings.Contains(v, "tcp://*") || strings.Contains(v, "0.0.0.0") || strings.Contains(v, "[::]") {
				t.Errorf("%s:%d: wildcard bind %q", path, i+1, strings.TrimSpace(line))
			}
		}
	}
	if checked < 5 {
		t.Errorf("checked only %d configurations", checked)
	}
}
