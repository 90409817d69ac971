package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to Load as a --config file and as
// --extra-engine-args text. Load must never panic; a failure is an *Error
// whose problems are single lines, and a success is a configuration that
// validates again and survives a marshal → Load round trip.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"model: m\nport: 9000\nnum_gpu_blocks: 32k\n",
		`{"engine_type":"sglang","sglang":{"page_size":16,"chunked_prefill_size":4096},"block_size":16}`,
		"kv_events_config: '{\"enable_kv_cache_events\": true, \"hwm\": 0}'\n",
		`{"speedup_ratio":"inf","reasoning":{"thinking_ratio":0.5}}`,
		"failure_rate: 0.3\nfailure_types: [rate_limit, 'truncate;after=5']\nfailure_script: 'first 3: rate_limit; then ok'\n",
		"dp_size: 4\nfpm_endpoint: tcp://*:5560\nzmq_kv_events_port: 65534\n",
		"- a\n- b\n", "{", "model: [", "max_model_len: 1e400\n", "is_prefill: true\n", "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	noEnv := func(string) (string, bool) { return "", false }
	host := func() (string, error) { return "fuzz", nil }
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, opts := range []LoadOptions{
			{ConfigPath: path, LookupEnv: noEnv, Hostname: host},
			{ExtraEngineArgs: "{" + strings.TrimPrefix(string(data), "{"), LookupEnv: noEnv, Hostname: host},
		} {
			cfg, _, err := Load(opts)
			if err != nil {
				var ce *Error
				if !errors.As(err, &ce) || len(ce.Problems) == 0 {
					t.Fatalf("error %v is not a *config.Error with problems", err)
				}
				for _, p := range ce.Problems {
					if strings.Contains(p, "\n") || p == "" {
						t.Fatalf("problem %q is not one line", p)
					}
				}
				continue
			}
			if _, err := cfg.Validate(); err != nil {
				t.Fatalf("loaded config does not validate: %v", err)
			}
			out, err := cfg.MarshalJSON()
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if _, _, err := Load(LoadOptions{ExtraEngineArgs: string(out), LookupEnv: noEnv, Hostname: host}); err != nil {
				t.Fatalf("marshalled config does not load back: %v\n%s", err, out)
			}
		}
	})
}
