package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// Bad speculative decoding and offload settings stop the server with one
// clear line and exit status 2.
func TestRun_BadSpeculativeAndOffloadSettingsExitWithStatus2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"malformed speculative config", []string{"--speculative-config", `{"method":"eagle","num_speculative_tokens":3`},
			"--speculative-config: "},
		{"k below 1", []string{"--speculative-config", `{"method":"eagle","num_speculative_tokens":0}`},
			"speculative_config.num_speculative_tokens must be >= 1, got 0"},
		{"acceptance rate above 1", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":2,"acceptance_rate":1.5}`},
			"speculative_config.acceptance_rate must be in [0, 1], got 1.5"},
		{"negative per-position rate", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":2,"acceptance_rate_per_position":[0.5,-0.1]}`},
			"speculative_config.acceptance_rate_per_position must be in [0, 1], got -0.1"},
		{"per-position rates of the wrong length", []string{"--speculative-config", `{"method":"mtp","num_speculative_tokens":3,"acceptance_rate_per_position":[0.5]}`},
			"speculative_config.acceptance_rate_per_position has 1 entries, want num_speculative_tokens (3)"},
		{"unknown method", []string{"--speculative-config", `{"method":"magic","num_speculative_tokens":3}`},
			`speculative_config.method "magic" is not one of`},
		{"unknown key", []string{"--speculative-config", `{"method":"ngram","num_speculative_tokens":3,"prompt_lookup_maxx":4}`},
			`unknown field "speculative_config.prompt_lookup_maxx"`},
		{"offload size below one block", []string{"--kv-offloading-size", "0.000001"},
			"--kv-offloading-size of 1074 bytes does not fit: a tier holds between 1 and 2147483647 blocks of 8388608 bytes"},
		{"offload size beyond 2^31 blocks", []string{"--kv-offloading-size", "1e9"},
			"--kv-offloading-size of 1073741824000000000 bytes does not fit"},
		{"negative offload size", []string{"--kv-offloading-size", "-1"}, "--kv-offloading-size must be a finite number >= 0, got -1"},
		{"disk tier without a CPU tier", []string{"--kv-offloading-disk-size", "4"}, "--kv-offloading-disk-size needs a CPU tier (--kv-offloading-size)"},
		{"offloading without prefix caching", []string{"--kv-offloading-size", "1", "--no-enable-prefix-caching"}, "KV offloading needs --enable-prefix-caching"},
		{"lmcache backend", []string{"--kv-offloading-size", "1", "--kv-offloading-backend", "lmcache"},
			"not supported yet: --kv-offloading-backend lmcache (needs the LMCache offloading backend)"},
		{"offloading connector without a size", []string{"--kv-transfer-config", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`},
			"OffloadingConnector needs kv_connector_extra_config.cpu_bytes_to_use > 0"},
		{"offloading connector and size together", []string{"--kv-offloading-size", "1", "--kv-transfer-config",
			`{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"cpu_bytes_to_use":1073741824}}`},
			"give --kv-offloading-size or --kv-transfer-config with OffloadingConnector, not both"},
		{"negative bandwidth", []string{"--kv-offloading-size", "1", "--offload-bandwidth", `{"cpu":-2}`},
			"offload_bandwidth.cpu must be a finite number >= 0, got -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runCLI(t, tt.args...)
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code = %d (err %v), want 2", code, err)
			}
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr %q, want one line containing %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

// The good forms load: --kv-offloading-size 1 alone is a 1 GiB CPU tier.
func TestRun_SpeculativeAndOffloadSettingsLoad(t *testing.T) {
	cfg := servedConfig(t, "--kv-offloading-size", "1", "--speculative-config", `{"method":"eagle","num_speculative_tokens":3}`)
	if cfg["kv_offloading_size"] != 1.0 || cfg["kv_offloading_backend"] != "native" {
		t.Errorf("offloading keys %v %v", cfg["kv_offloading_size"], cfg["kv_offloading_backend"])
	}
	spec, _ := cfg["speculative_config"].(map[string]any)
	if spec["method"] != "eagle" || spec["num_speculative_tokens"] != 3.0 {
		t.Errorf("speculative_config %v", cfg["speculative_config"])
	}
}

// offloadConsumer is an independent KV event consumer in Python (pyzmq and
// msgpack): it replays a rank's whole event stream from the replay socket
// and rebuilds the set of hashes per medium, as a tier-aware router would.
const offloadConsumer = `
import json, sys, zmq, msgpack
ctx = zmq.Context()
s = ctx.socket(zmq.DEALER)
s.setsockopt(zmq.RCVTIMEO, 5000)
s.connect(sys.argv[1])
s.send_multipart([b"", (0).to_bytes(8, "big")])
media, stored_cpu = {}, 0
while True:
    frames = s.recv_multipart()
    if frames[2] == b"\xff" * 8:
        break
    ts, events, rank = msgpack.unpackb(frames[3], raw=False)
    for e in events:
        kind = e["type"]
        if kind == "AllBlocksCleared":
            media = {}
            continue
        m = media.setdefault(e["medium"], set())
        for h in e["block_hashes"]:
            if kind == "BlockStored":
                assert h not in m, ("stored twice", e)
                m.add(h)
                if e["medium"] == "CPU":
                    assert e["token_ids"] == [] and e["parent_block_hash"] is None, e
                    stored_cpu += 1
            else:
                assert h in m, ("removed but not stored", e)
                m.remove(h)
print(json.dumps({"blocks": {k: len(v) for k, v in media.items()}, "stored_cpu": stored_cpu}))
`

// TestE2E_OffloadTierThroughTheServer runs S26 on a real server: a 10-block
// GPU pool of 16-token blocks and --kv-offloading-size of 20 blocks of 2 MiB
// (kv_bytes_per_token 131072 x 16). The repeat of the first prompt reports
// its 96 tokens loaded from the CPU tier as cached, and a Python consumer
// of the replayed KV events rebuilds per medium exactly the block counts the
// server's mocker_kv_tier_blocks gauges show.
func TestE2E_OffloadTierThroughTheServer(t *testing.T) {
	py := testutil.DebianPython(t, "zmq", "msgpack")
	var P, R int
	var srv *running
	testutil.WithPortRuns(t, 2, 1, func(bases []int) error {
		P, R = bases[0], bases[1]
		var err error
		srv, err = e2eTryStartProduction(t, loadConfig(t, map[string]any{
			"block_size": 16, "num_gpu_blocks": 10, "kv_offloading_size": 20 * 2.0 / 1024,
			"zmq_kv_events_port": P, "zmq_replay_port": R, "log_level": "error",
			"enable_prompt_tokens_details": true,
		}))
		return err
	})
	seq := func(base, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = base + i
		}
		return out
	}
	complete := func(prompt []int) string {
		body, _ := json.Marshal(map[string]any{"model": "mocker-model", "prompt": prompt, "max_tokens": 1})
		resp, err := srv.client.Post(srv.url+"/v1/completions", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("request: %d %s", resp.StatusCode, b)
		}
		return string(b)
	}
	complete(seq(1000, 100))
	complete(seq(5000, 150))
	if body := complete(seq(1000, 100)); !strings.Contains(body, `"prompt_tokens_details":{"cached_tokens":96}`) {
		t.Errorf("repeat of the first prompt: %s, want cached_tokens 96", body)
	}
	exp := srv.e2eScrape(t)
	gauge := func(medium string) int {
		return int(exp.value("mocker_kv_tier_blocks", map[string]string{"engine": "0", "medium": medium}))
	}
	var got struct {
		Blocks    map[string]int `json:"blocks"`
		StoredCPU int            `json:"stored_cpu"`
	}
	testutil.WaitUntil(t, 5*time.Second, func() string {
		out, err := exec.Command(py, "-c", offloadConsumer, fmt.Sprintf("tcp://127.0.0.1:%d", R)).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("consumer: %v\n%s", err, out)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			return fmt.Sprintf("consumer output %q: %v", out, err)
		}
		if got.Blocks["GPU"] != gauge("GPU") || got.Blocks["CPU"] != gauge("CPU") {
			return fmt.Sprintf("consumer rebuilt %v, server gauges GPU %d CPU %d", got.Blocks, gauge("GPU"), gauge("CPU"))
		}
		return ""
	})
	// A's 6 blocks went down when B arrived, 6 of B's when A came back.
	if got.StoredCPU != 12 || got.Blocks["GPU"] != 9 || got.Blocks["CPU"] != 12 {
		t.Errorf("consumer: %+v, want 12 CPU stores, 9 GPU and 12 CPU blocks", got)
	}
	if hits := exp.value("mocker_kv_tier_hits_total", map[string]string{"engine": "0", "medium": "CPU"}); hits != 6 {
		t.Errorf("CPU tier hits %v, want 6", hits)
	}
}
