package main

// Tests of the shipped files in configs/: every engine config loads through
// the real loader and runs requests (virtual time and a live server with
// the production metrics and ZMQ publishers), and the Grafana dashboard
// only queries metrics a live server exports.

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// cfgsRepoRoot is the repository root relative to this package's directory.
const cfgsRepoRoot = "../.."

// cfgsNoEnv keeps VLLM_API_KEY and PYTHONHASHSEED of the environment out of
// the loaded configurations.
func cfgsNoEnv(string) (string, bool) { return "", false }

// cfgsEngineFiles returns the engine configuration files configs/*.yaml;
// the working directory must be the repository root (t.Chdir), where
// `make run` uses them and relative paths in them resolve.
func cfgsEngineFiles(t *testing.T) []string {
	t.Helper()
	rel, err := filepath.Glob(filepath.Join("configs", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"demo", "fast-ci", "interpolated", "small-cache", "trtllm", "vllm-default"} {
		if !slices.Contains(rel, filepath.Join("configs", want+".yaml")) {
			t.Errorf("configs/%s.yaml is missing", want)
		}
	}
	return rel
}

// cfgsLoad loads path with the real loader; overlay plays the role
// of explicitly set CLI flags. Warnings fail the test: the shipped
// configurations must be clean.
func cfgsLoad(t *testing.T, path string, overlay map[string]any) *config.Config {
	t.Helper()
	cfg, warns, err := config.Load(config.LoadOptions{ConfigPath: path, Overlay: overlay, LookupEnv: cfgsNoEnv})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	if len(warns) > 0 {
		t.Errorf("load %s: warnings %q", path, warns)
	}
	return cfg
}

// cfgsLoopback moves everything a config would bind (HTTP, Dynamo-style
// KV-event and replay ports, FPM endpoint) to loopback, as CLI flags would:
// HTTP to a port the kernel chooses, the ZMQ sockets to the runs of free
// ports starting at bases[0..3] (DP rank r adds r).
func cfgsLoopback(cfg *config.Config, bases []int) map[string]any {
	// Overlay numbers are json.Number, as config.FlagOverlay produces them.
	port := func(i int) json.Number { return json.Number(strconv.Itoa(bases[i])) }
	o := map[string]any{"host": "127.0.0.1", "port": json.Number("0")}
	if cfg.ZMQKVEventsPort != 0 {
		o["zmq_kv_events_port"] = port(0)
	}
	if cfg.ZMQReplayPort != 0 {
		o["zmq_replay_port"] = port(1)
	}
	if cfg.FPMEndpoint != "" {
		o["fpm_endpoint"] = fmt.Sprintf("tcp://127.0.0.1:%d", bases[2])
	}
	if k := cfg.KVEventsConfig; k != nil && k.EnableKVCacheEvents {
		o["kv_events_config"] = map[string]any{"enable_kv_cache_events": true,
			"endpoint": fmt.Sprintf("tcp://127.0.0.1:%d", bases[3])}
	}
	return o
}

// cfgsServeLoopback loads path (whose configuration is cfg) moved to
// loopback (cfgsLoopback) and runs serve() with productionOptions (the
// Prometheus registry and real ZMQ publishers) until the test ends.
func cfgsServeLoopback(t *testing.T, path string, cfg *config.Config) (live *config.Config, baseURL string, client *http.Client) {
	t.Helper()
	testutil.WithPortRuns(t, 4, max(cfg.DPSize, 1), func(bases []int) error {
		live = cfgsLoad(t, path, cfgsLoopback(cfg, bases))
		r, err := e2eTryStartProduction(t, live)
		if err != nil {
			return err
		}
		baseURL, client = r.url, r.client
		return nil
	})
	return live, baseURL, client
}

// cfgsChat sends a non-streamed chat completion and returns the decoded body.
func cfgsChat(t *testing.T, client *http.Client, baseURL, model string, maxTokens int) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Hello from the configs test!"}],"max_tokens":%d}`, model, maxTokens)
	resp, err := client.Post(baseURL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: status %d: %s", resp.StatusCode, raw)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("chat: %v: %s", err, raw)
	}
	return out
}

// cfgsObserver records what the engine reports.
type cfgsObserver struct {
	preemptions int
	finished    []engine.FinishedRecord
}

func (o *cfgsObserver) ObserveGauges(engine.Gauges) {}
func (o *cfgsObserver) ObservePass(r *engine.PassReport) {
	o.preemptions += r.Preemptions
	o.finished = append(o.finished, r.Finished...)
}

// tokens returns n token ids starting at from.
func cfgsTokens(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(1000 + (from+i)%100000)
	}
	return out
}

// cfgsSimulate runs reqs (prompt length, output length, arrival) on a fresh
// Core for cfg in virtual time.
func cfgsSimulate(t *testing.T, cfg *config.Config, rank int, reqs [][2]int) *cfgsObserver {
	t.Helper()
	obs := &cfgsObserver{}
	profile, err := loaders(io.Discard).TimingProfile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	core, err := engine.NewCore(cfg.EngineConfig(profile), engine.CoreOptions{Rank: rank, Observer: obs})
	if err != nil {
		t.Fatalf("engine.NewCore(rank %d): %v", rank, err)
	}
	sim := engine.NewSimulator(core)
	for i, r := range reqs {
		sim.SubmitAt(time.Duration(i)*time.Millisecond, &engine.Request{
			ID:            engine.NewRequestID(),
			Prompt:        cfgsTokens(i*7919, r[0]),
			PlannedOutput: cfgsTokens(i*104729+r[0], r[1]),
			Out:           engine.NewOutput(),
		})
	}
	if passes := sim.Run(1_000_000); passes == 0 || passes >= 1_000_000 {
		t.Fatalf("simulation ran %d passes", passes)
	}
	if len(obs.finished) != len(reqs) {
		t.Fatalf("%d of %d requests finished", len(obs.finished), len(reqs))
	}
	for i, f := range obs.finished {
		if f.Reason != "length" || f.Generated == 0 {
			t.Errorf("request %d finished %q after %d tokens", i, f.Reason, f.Generated)
		}
	}
	return obs
}

// Every engine configuration in configs/ loads through the real loader
// (relative paths resolve against the repository root, as with `make
// run`), builds an engine per DP rank that runs a request in virtual time,
// and serves a live chat completion with the production metrics and ZMQ
// publishers (its ports moved to free loopback ports).
func TestConfigs_EveryEngineConfigLoadsAndServes(t *testing.T) {
	t.Chdir(cfgsRepoRoot)
	files := cfgsEngineFiles(t)
	if len(files) == 0 {
		t.Fatal("no configs/*.yaml")
	}
	for _, path := range files {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".yaml"), func(t *testing.T) {
			cfg := cfgsLoad(t, path, nil)
			for r := range cfg.DPSize {
				cfgsSimulate(t, cfg, r, [][2]int{{100, 8}})
			}

			live, url, client := cfgsServeLoopback(t, path, cfg)
			if live.EngineType != cfg.EngineType || live.BlockSize != cfg.BlockSize ||
				live.TimingModel != cfg.TimingModel || live.NumGPUBlocks != cfg.NumGPUBlocks {
				t.Fatalf("overlay changed the engine: %+v", live)
			}
			out := cfgsChat(t, client, url, live.ServedName(), 4)
			choices, _ := out["choices"].([]any)
			if len(choices) != 1 {
				t.Fatalf("chat: %v", out)
			}
			if fr := choices[0].(map[string]any)["finish_reason"]; fr != "length" {
				t.Errorf("finish_reason = %v", fr)
			}
			if u, _ := out["usage"].(map[string]any); u == nil || u["completion_tokens"] != 4.0 {
				t.Errorf("usage = %v", out["usage"])
			}
			// The Dynamo-style event sockets are bound where configured.
			for _, port := range []int{live.ZMQKVEventsPort, live.ZMQReplayPort} {
				if port == 0 {
					continue
				}
				c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 2*time.Second)
				if err != nil {
					t.Errorf("ZMQ port %d: %v", port, err)
				} else {
					c.Close()
				}
			}
		})
	}
}

// The demo configuration of `make run` and docker compose really enables
// KV events (with replay) and forward-pass metrics.
func TestConfigs_DemoEnablesEventsAndFPM(t *testing.T) {
	t.Chdir(cfgsRepoRoot)
	cfg := cfgsLoad(t, "configs/demo.yaml", nil)
	if cfg.ZMQKVEventsPort != 5557 || cfg.ZMQReplayPort != 5558 || cfg.FPMEndpoint != "ipc:///tmp/mocker-server-fpm.ipc" || cfg.Port != 8000 {
		t.Errorf("demo.yaml: kv events %d, replay %d, fpm %q, port %d",
			cfg.ZMQKVEventsPort, cfg.ZMQReplayPort, cfg.FPMEndpoint, cfg.Port)
	}
	if !cfg.EnablePrefixCaching || cfg.WorkerType != config.WorkerAggregated {
		t.Error("demo.yaml: events need prefix caching on an aggregated worker")
	}
}

// configs/vllm-default.yaml spells out the built-in defaults: loading it
// gives exactly the configuration of a bare `mocker-server serve`.
func TestConfigs_VLLMDefaultIsTheBuiltInDefault(t *testing.T) {
	t.Chdir(cfgsRepoRoot)
	got := cfgsLoad(t, "configs/vllm-default.yaml", nil)
	want, _, err := config.Load(config.LoadOptions{LookupEnv: cfgsNoEnv})
	if err != nil {
		t.Fatal(err)
	}
	// Only the bookkeeping of "was num_gpu_blocks set" differs.
	got.NumGPUBlocksOverridden = false
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("vllm-default.yaml differs from the defaults:\n%s\nwant:\n%s", g, w)
	}
}

// configs/small-cache.yaml preempts under load: 16 concurrent requests of
// 256 prompt + 512 output tokens need far more than its 128 blocks.
func TestConfigs_SmallCachePreemptsUnderLoad(t *testing.T) {
	t.Chdir(cfgsRepoRoot)
	cfg := cfgsLoad(t, "configs/small-cache.yaml", nil)
	reqs := make([][2]int, 16)
	for i := range reqs {
		reqs[i] = [2]int{256, 512}
	}
	obs := cfgsSimulate(t, cfg, 0, reqs)
	if obs.preemptions == 0 {
		t.Error("no preemption under load")
	}
	t.Logf("%d preemptions", obs.preemptions)

	// With the default cache the same load runs without preemption.
	def := cfgsLoad(t, "configs/vllm-default.yaml", nil)
	if p := cfgsSimulate(t, def, 0, reqs).preemptions; p != 0 {
		t.Errorf("default cache: %d preemptions", p)
	}
}

// cfgsMetricNameRE matches the metric names a PromQL expression of the
// dashboard can refer to.
var cfgsMetricNameRE = regexp.MustCompile(`(?:vllm:|sglang:|mocker_|go_|process_)[A-Za-z0-9_:]*`)

// cfgsPromQL returns every PromQL expression of a Grafana dashboard: the
// panels' target "expr"s and the templating variables' queries.
func cfgsPromQL(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch s, isStr := e.(string); {
			case isStr && (k == "expr" || k == "definition"):
				*out = append(*out, s)
			case isStr && k == "query":
				*out = append(*out, s)
			default:
				cfgsPromQL(e, out)
			}
		}
	case []any:
		for _, e := range x {
			cfgsPromQL(e, out)
		}
	}
}

// cfgsScrapeFamilies returns the metric families of a /metrics scrape with
// their types.
func cfgsScrapeFamilies(t *testing.T, client *http.Client, url string) map[string]string {
	t.Helper()
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	fams := map[string]string{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			fams[f[2]] = f[3]
		}
	}
	if len(fams) == 0 {
		t.Fatalf("no metric families in /metrics:\n%s", raw)
	}
	return fams
}

// Every metric the Grafana dashboard queries is exported by a live server
// running the compose stack's configuration (configs/demo.yaml).
func TestGrafanaDashboard_QueriesUseExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(cfgsRepoRoot, "configs/grafana/dashboards/mocker-server.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var exprs []string
	cfgsPromQL(dash, &exprs)
	if len(exprs) < 10 {
		t.Fatalf("only %d PromQL expressions in the dashboard", len(exprs))
	}

	t.Chdir(cfgsRepoRoot)
	base := cfgsLoad(t, "configs/demo.yaml", nil)
	cfg, url, client := cfgsServeLoopback(t, "configs/demo.yaml", base)
	cfgsChat(t, client, url, cfg.ServedName(), 4)
	fams := cfgsScrapeFamilies(t, client, url)

	used := map[string]bool{}
	for _, e := range exprs {
		names := cfgsMetricNameRE.FindAllString(e, -1)
		if len(names) == 0 && !strings.Contains(e, "$") {
			t.Errorf("expression refers to no known metric: %s", e)
		}
		for _, n := range names {
			used[n] = true
			if _, ok := fams[n]; ok {
				continue
			}
			base, found := "", false
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(n, suf); ok {
					base, found = b, true
				}
			}
			if found && fams[base] == "histogram" {
				continue
			}
			t.Errorf("dashboard queries %s, which /metrics does not export (in %s)", n, e)
		}
	}
	// The panels the dashboard is for.
	for _, want := range []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:time_to_first_token_seconds_bucket", "vllm:inter_token_latency_seconds_bucket",
		"vllm:e2e_request_latency_seconds_bucket", "vllm:prompt_tokens_total",
		"vllm:generation_tokens_total", "vllm:prefix_cache_hits_total",
		"vllm:prefix_cache_queries_total", "vllm:num_preemptions_total",
		"mocker_fpm_num_prefill_requests", "mocker_fpm_num_decode_requests",
		"mocker_fpm_sum_prefill_tokens", "mocker_fpm_sum_decode_kv_tokens",
	} {
		if !used[want] {
			t.Errorf("dashboard has no query of %s", want)
		}
	}
	if t.Failed() {
		names := make([]string, 0, len(fams))
		for n := range fams {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("exported families: %s", strings.Join(names, " "))
	}
}

// The provisioning files parse and agree with each other and with
// docker-compose.yml: the dashboard's datasource uid is the provisioned
// one, and Prometheus scrapes the compose service on the HTTP port.
func TestGrafanaProvisioning_IsConsistent(t *testing.T) {
	read := func(rel string, v any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(cfgsRepoRoot, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, v); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
	}
	var ds struct {
		Datasources []struct {
			UID  string `json:"uid"`
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"datasources"`
	}
	read("configs/grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Fatalf("datasources = %+v", ds)
	}
	var dash map[string]any
	read("configs/grafana/dashboards/mocker-server.json", &dash)
	uids := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if d, ok := x["datasource"].(map[string]any); ok {
				uids[fmt.Sprint(d["uid"])] = true
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(dash)
	if len(uids) != 1 || !uids[ds.Datasources[0].UID] {
		t.Errorf("dashboard datasource uids %v, provisioned %q", uids, ds.Datasources[0].UID)
	}
	var prov struct {
		Providers []struct {
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	read("configs/grafana/provisioning/dashboards/mocker-server.yml", &prov)
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	read("configs/prometheus.yml", &prom)
	var compose struct {
		Services map[string]struct {
			Command []string `json:"command"`
			Ports   []string `json:"ports"`
			Volumes []string `json:"volumes"`
		} `json:"services"`
	}
	read("docker-compose.yml", &compose)
	ms, ok := compose.Services["mocker-server"]
	if !ok || !slices.Contains(ms.Ports, "8000:8000") || !slices.Contains(ms.Command, "configs/demo.yaml") {
		t.Errorf("compose mocker-server = %+v", ms)
	}
	// The ZMQ streams have no authentication: published on loopback only.
	for _, p := range []string{"127.0.0.1:5557:5557", "127.0.0.1:5558:5558", "127.0.0.1:5560:5560"} {
		if !slices.Contains(ms.Ports, p) {
			t.Errorf("compose mocker-server does not publish %s", p)
		}
	}
	if len(prom.ScrapeConfigs) == 0 || len(prom.ScrapeConfigs[0].StaticConfigs) == 0 ||
		!slices.Contains(prom.ScrapeConfigs[0].StaticConfigs[0].Targets, "mocker-server:8000") {
		t.Errorf("prometheus.yml does not scrape mocker-server:8000: %+v", prom)
	}
	if len(prov.Providers) != 1 || !slices.Contains(compose.Services["grafana"].Volumes,
		"./configs/grafana/dashboards:"+prov.Providers[0].Options.Path+":ro") {
		t.Errorf("dashboard provider path %+v is not where compose mounts the dashboards", prov.Providers)
	}
}
