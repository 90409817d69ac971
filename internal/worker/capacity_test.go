package worker

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
)

// TestTRTLLMCapacityPolicyOnTheWire serves two concurrent completions on a
// trtllm worker whose pool (5 blocks of 16 tokens) holds both prompts but
// not both outputs, under each --trtllm-capacity-scheduler-policy, and
// reads vllm:num_preemptions_total from its /metrics: guaranteed_no_evict
// runs them one after the other without preemption, max_utilization runs
// them together and preempts when decoding runs short. Both complete
// either way.
func TestTRTLLMCapacityPolicyOnTheWire(t *testing.T) {
	for _, tc := range []struct {
		policy  string
		preempt bool
	}{
		{"guaranteed_no_evict", false},
		{"max_utilization", true},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			cfg, _, err := config.Load(config.LoadOptions{
				Overlay: map[string]any{"port": json.Number("0"), "log_level": "warn", "engine_type": "trtllm",
					"trtllm":     map[string]any{"capacity_scheduler_policy": tc.policy},
					"block_size": json.Number("16"), "num_gpu_blocks": json.Number("5"), "max_model_len": json.Number("256"),
					"timing_model": "fixed", "fixed_prefill_ms": json.Number("2"), "fixed_decode_ms": json.Number("10")},
				LookupEnv: func(string) (string, bool) { return "", false },
				Hostname:  func() (string, error) { return "testhost", nil },
			})
			if err != nil {
				t.Fatal(err)
			}
			opts, err := Production(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			w := New(cfg, opts)
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			defer http.DefaultClient.CloseIdleConnections()
			var wg sync.WaitGroup
			tokens := make([]float64, 2)
			for i := range 2 {
				wg.Go(func() {
					body := `{"prompt":"` + strings.Repeat("w"+string(rune('a'+i))+" ", 10) + `","max_tokens":40}`
					resp, err := http.Post(w.URL()+"/v1/completions", "application/json", strings.NewReader(body))
					if err != nil {
						t.Error(err)
						return
					}
					defer resp.Body.Close()
					var out struct {
						Usage struct {
							CompletionTokens float64 `json:"completion_tokens"`
						} `json:"usage"`
					}
					if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
						t.Errorf("request %d: status %d", i, resp.StatusCode)
					}
					tokens[i] = out.Usage.CompletionTokens
				})
			}
			wg.Wait()
			if tokens[0] != 40 || tokens[1] != 40 {
				t.Errorf("completion tokens %v, want 40 each", tokens)
			}
			preemptions := metricValue(t, w.URL(), `vllm:num_preemptions_total{engine="0",model_name="mocker-model"}`)
			t.Logf("%s: %v preemptions", tc.policy, preemptions)
			if got := preemptions > 0; got != tc.preempt {
				t.Errorf("%s: %v preemptions, want preemption %v", tc.policy, preemptions, tc.preempt)
			}
		})
	}
}

// metricValue scrapes one series' value from a worker's /metrics.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("%s: %q", series, v)
			}
			return f
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return 0
}
