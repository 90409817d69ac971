package main

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The brief's command line: a preset replays and prints a JSON report
// whose latencies come from the hardware model (not the polynomial one).
func TestReplay_HardwarePresetPrintsReport(t *testing.T) {
	args := []string{"replay", "--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
		"--tensor-parallel-size", "1", "--requests", "200", "--rate", "8", "--input-len", "1000", "--output-len", "500", "--json"}
	out, stderr, err := runCLI(t, args...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want nothing (--model is used, h100_sxm has tables)", stderr)
	}
	var rep struct {
		Summary struct {
			Completed int `json:"completed"`
			TTFT      struct {
				P50 float64 `json:"p50"`
			} `json:"ttft_ms"`
			ITL struct {
				P50 float64 `json:"p50"`
			} `json:"itl_ms"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v", err)
	}
	s := rep.Summary
	// An 8B model on one H100 reads 16 GB of weights per pass (≥ 4.8 ms at
	// 3.35 TB/s) and a 1000-token prompt is 16 TFLOP (≥ 16 ms at 989
	// TFLOPS): the model must sit above both floors.
	if s.Completed != 200 || s.ITL.P50 < 4.8 || s.ITL.P50 > 40 || s.TTFT.P50 < 16 || s.TTFT.P50 > 400 {
		t.Errorf("summary %+v", s)
	}
	again, _, _ := runCLI(t, args...)
	if again != out {
		t.Error("two runs printed different reports")
	}
	// The same preset on H200 (more bandwidth) decodes faster.
	h200, _, err := runCLI(t, append([]string{"replay", "--hardware", "h200_sxm"}, args[3:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	var rep2 = rep
	if err := json.Unmarshal([]byte(h200), &rep2); err != nil {
		t.Fatal(err)
	}
	if !(rep2.Summary.ITL.P50 < s.ITL.P50) {
		t.Errorf("H200 ITL p50 %.2f ms, H100 %.2f ms", rep2.Summary.ITL.P50, s.ITL.P50)
	}
}

// serve starts with the same flags, sizes the KV pool as vLLM would and
// says so in vllm:cache_config_info.
func TestServe_HardwarePresetStarts(t *testing.T) {
	url, stderr := startRun(t, "serve", "--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-8B-Instruct",
		"--tensor-parallel-size", "1", "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "fp8", "--port", "0",
		"--speedup-ratio", "50")
	resp, err := http.Post(url+"/v1/completions", "application/json",
		strings.NewReader(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"Hello there","max_tokens":3}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"completion_tokens":3`) {
		t.Fatalf("completion: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`vllm:cache_config_info\{[^}]*cache_dtype="fp8"[^}]*gpu_memory_utilization="0.85"[^}]*num_gpu_blocks="(\d+)"`).FindSubmatch(metrics)
	if m == nil {
		t.Fatalf("no cache_config_info with the hardware settings in:\n%s\nstderr:\n%s", metrics, stderr.String())
	}
	if !strings.Contains(string(metrics), `timing_model="hardware"`) {
		t.Errorf("mocker_info does not name the hardware timing model")
	}
	// 80 GiB × 0.85 − 15 GiB of weights − activations and CUDA context,
	// at 64 KiB per token (FP8 KV) in blocks of 64 tokens: ≈ 13,000 blocks.
	if n, _ := strconv.Atoi(string(m[1])); n < 11000 || n > 14000 {
		t.Errorf("num_gpu_blocks = %d", n)
	}
}

// Bad hardware input stops startup with one line and exit status 2.
func TestHardware_BadInputExitsWithOneLine(t *testing.T) {
	dir := t.TempDir()
	phi := filepath.Join(dir, "phi")
	noField := filepath.Join(dir, "nofield")
	awq := filepath.Join(dir, "awq")
	for d, body := range map[string]string{
		awq:     `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":128256,"quantization_config":{"quant_method":"awq","bits":4}}`,
		phi:     `{"architectures":["PhiForCausalLM"],"hidden_size":2560}`,
		noField: `{"architectures":["LlamaForCausalLM"],"hidden_size":4096,"num_hidden_layers":32,"num_attention_heads":32,"intermediate_size":14336,"max_position_embeddings":8192,"vocab_size":128256}`,
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "config.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	llama := []string{"--model", "meta-llama/Llama-3.1-8B-Instruct"}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown GPU", append([]string{"--hardware", "h300"}, llama...), `hardware h300: unknown GPU "h300" (known: a100_pcie,`},
		{"unknown architecture", []string{"--hardware", "h100_sxm", "--model", phi}, `unsupported architecture "PhiForCausalLM"`},
		{"config.json missing a field", []string{"--hardware", "h100_sxm", "--model", noField}, `missing field "num_key_value_heads"`},
		{"unknown model id", []string{"--hardware", "h100_sxm", "--model", "acme/foo-7b"}, `"acme/foo-7b" is neither a directory with config.json nor a known model id`},
		{"checkpoint quantization without tables", []string{"--hardware", "h100_sxm", "--model", awq}, "is quantized with awq: no operator tables for it"},
		{"quantization without tables", append([]string{"--hardware", "h100_sxm", "--quantization", "awq"}, llama...), "quantization awq: no operator tables for it (supported: fp8, nvfp4 / modelopt_fp4)"},
		{"FP8 on A100", append([]string{"--hardware", "a100_sxm", "-q", "fp8"}, llama...), "quantization fp8 on a100_sxm: no operator tables for FP8 GEMMs"},
		{"70B BF16 on one H100", []string{"--hardware", "h100_sxm", "--model", "meta-llama/Llama-3.1-70B-Instruct"}, "ValueError: No available memory for the cache blocks."},
		{"max_model_len beyond the KV pool", append([]string{"--hardware", "l4", "--max-model-len", "200000"}, llama...),
			"ValueError: To serve at least one request with the models's max seq len (200000)"},
		{"Llama 4 Scout at its 10M-position default", []string{"--hardware", "h200_sxm", "-tp", "4", "--model", "meta-llama/Llama-4-Scout-17B-16E-Instruct"},
			"ValueError: To serve at least one request with the models's max seq len (10485760)"},
		{"explicit timing model", append([]string{"--hardware", "h100_sxm", "--timing-model", "polynomial"}, llama...),
			"hardware h100_sxm conflicts with timing_model polynomial"},
		{"PCIe interconnect on an NVLink GPU", append([]string{"--hardware", "h100_sxm", "-tp", "2", "--gpu-interconnect", "pcie"}, llama...),
			"gpu interconnect pcie: h100_sxm's GPUs are not linked over PCIe"},
		{"tensor parallel not dividing heads", append([]string{"--hardware", "h100_sxm", "-tp", "3"}, llama...),
			"tensor parallel size 3 does not divide num_attention_heads 32"},
	} {
		for _, cmd := range []string{"serve", "replay"} {
			t.Run(c.name+"/"+cmd, func(t *testing.T) {
				args := append([]string{cmd}, c.args...)
				if cmd == "replay" {
					args = append(args, "--requests", "5")
				}
				stdout, stderr, err := runCLI(t, args...)
				if code := exitCode(err); code != 2 {
					t.Errorf("exit status %d (err %v), want 2", code, err)
				}
				lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
					t.Errorf("stderr %q, want one line containing %q", stderr, c.want)
				}
				if stdout != "" {
					t.Errorf("stdout = %q", stdout)
				}
			})
		}
	}
}

// A fleet mixes GPUs: each group's args pick its own hardware. On the same
// requests the H200 worker (4.8 TB/s) decodes faster than the A100 one
// (2.0 TB/s) and its larger memory gives it a larger KV pool.
func TestReplay_FleetMixesGPUs(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.yaml")
	body := "workers:\n" +
		"  - count: 1\n    args: [--hardware, a100_sxm, --model, Qwen/Qwen3-8B]\n" +
		"  - count: 1\n    args: [--hardware, h200_sxm, --model, Qwen/Qwen3-8B, --engine-type, sglang]\n"
	if err := os.WriteFile(fleet, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rows := filepath.Join(dir, "rows.csv")
	out, stderr, err := runCLI(t, "replay", "--json", "--fleet-file", fleet, "--requests", "40", "--rate", "4",
		"--input-len", "800", "--output-len", "100", "--csv", rows)
	if err != nil || stderr != "" {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	var rep struct {
		Workers []struct {
			Name       string  `json:"name"`
			Routed     int     `json:"routed"`
			KVUsageMax float64 `json:"kv_usage_max"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Workers) != 2 || rep.Workers[0].Routed != 20 || rep.Workers[1].Routed != 20 {
		t.Fatalf("workers %+v", rep.Workers)
	}
	if !(rep.Workers[0].KVUsageMax > 1.5*rep.Workers[1].KVUsageMax) {
		t.Errorf("peak KV usage: A100 %.4f, H200 %.4f; want the A100's pool well fuller", rep.Workers[0].KVUsageMax, rep.Workers[1].KVUsageMax)
	}
	f, err := os.Open(rows)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	itl := map[string][]float64{}
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[col["itl_mean_ms"]], 64)
		itl[r[col["worker"]]] = append(itl[r[col["worker"]]], v)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	a100, h200 := mean(itl["w0"]), mean(itl["w1"])
	if !(h200 < 0.7*a100) {
		t.Errorf("mean ITL: A100 %.2f ms, H200 %.2f ms; want the H200 well faster", a100, h200)
	}
}
