package worker

import (
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kvtransfer"
)

// BannerMode says how much a worker tells on stderr when it first listens.
type BannerMode int

const (
	// BannerFull: the "listening on" line, then one indented line per
	// endpoint and per loaded component (serve).
	BannerFull BannerMode = iota
	// BannerCompact: the "listening on" line and one indented line of the
	// worker's other endpoints (a fleet, whose summary says the rest).
	BannerCompact
)

// bannerItem is one labelled line of the startup banner, also one
// attribute of its structured log line.
type bannerItem struct {
	label string // the banner's column
	key   string // the log attribute
	value string
}

// bannerItems describes the worker listening at baseURL: every endpoint
// it serves or binds and what it loaded.
func (w *Worker) bannerItems(baseURL string) []bannerItem {
	c := w.cfg
	var items []bannerItem
	add := func(label, key, value string) { items = append(items, bannerItem{label, key, value}) }
	add("API", "api", baseURL+"/v1 (model "+strconv.Quote(c.ServedName())+")")
	if c.UI {
		ui := baseURL + "/ui"
		if len(c.APIKey) > 0 {
			// The page is guarded like /v1: a browser that opens the bare URL
			// gets a 401, so say how to log in (never the key itself).
			ui += " (--api-key: open /ui?key=KEY once)"
		}
		add("live view", "ui", ui)
	}
	add("metrics", "metrics", baseURL+"/metrics ("+string(c.ResolvedMetricsFamily())+")")
	if c.AdminKey != "" {
		// The run-time fault settings exist only with an admin key, on
		// the API port (docs/FAULTS.md); say so where the endpoints are.
		add("admin faults", "admin_faults", baseURL+"/admin/faults (Bearer --admin-key)")
	}
	if c.ZMQKVEventsPort > 0 {
		add("KV events", "kv_events", rankRange(zmqEndpoint(c.Host, c.ZMQKVEventsPort), c.DPSize)+" (PUB)")
	}
	if c.ZMQReplayPort > 0 {
		add("KV replay", "kv_replay", rankRange(zmqEndpoint(c.Host, c.ZMQReplayPort), c.DPSize)+" (ROUTER)")
	}
	if k := c.KVEventsConfig; k != nil && k.EnableKVCacheEvents && k.Publisher != config.PublisherNull {
		add("KV events", "kv_events", rankRange(k.Endpoint, c.DPSize)+" (kv_events_config)")
		if k.ReplayEndpoint != nil && *k.ReplayEndpoint != "" {
			add("KV replay", "kv_replay", rankRange(*k.ReplayEndpoint, c.DPSize))
		}
	}
	if c.FPMEndpoint != "" {
		add("FPM", "fpm", rankRange(c.FPMEndpoint, c.DPSize))
	}
	if c.Disaggregated() {
		add("side channel", "side_channel", baseURL+kvtransfer.PullPath+", "+kvtransfer.ReleasePath)
		if c.BootstrapPort > 0 {
			add("bootstrap", "bootstrap", net.JoinHostPort(c.Host, strconv.Itoa(c.BootstrapPort)))
		}
	}
	if w.opts.AdminURL != "" {
		add("admin API", "admin", w.opts.AdminURL+" (/workers, /ui)")
	}
	if c.EnableSleepMode {
		// vLLM attaches the sleep routes only in dev mode; without it they
		// are 404 and only the fleet admin API can sleep the worker, so say
		// which one it is rather than leave a newcomer with a bare 404.
		if c.DevMode {
			add("sleep mode", "sleep_mode", baseURL+"/sleep, /wake_up, /is_sleeping")
		} else {
			add("sleep mode", "sleep_mode", "HTTP routes off: set VLLM_SERVER_DEV_MODE=1 or --dev-mode for /sleep, /wake_up, /is_sleeping")
		}
	}
	tok, tmpl := w.textSources()
	add("tokenizer", "tokenizer", tok)
	add("chat template", "chat_template", tmpl)
	pool := KVPoolShape(c)
	if c.DPSize > 1 {
		pool += fmt.Sprintf(" (× %d ranks)", c.DPSize)
	}
	add("KV pool", "kv_pool", pool)
	timing := string(c.TimingModel)
	switch {
	case c.HardwareTiming != nil:
		timing = fmt.Sprintf("hardware model: %s × %d (tensor parallel), %s kernels", c.Hardware, max(c.TensorParallelSize, 1), c.HardwareTiming.Framework())
	case c.PlannerProfileData != "":
		timing += " (" + c.PlannerProfileData + ")"
	}
	switch {
	case c.SpeedupRatio == 0 || math.IsInf(c.SpeedupRatio, 1):
		timing += ", no delay (--speedup-ratio " + strconv.FormatFloat(c.SpeedupRatio, 'g', -1, 64) + ")"
	case c.SpeedupRatio != 1:
		timing += fmt.Sprintf(", durations ÷ %g (--speedup-ratio)", c.SpeedupRatio)
	}
	add("timing", "timing_model", timing)
	add("engine", "engine", fmt.Sprintf("%s, %s", c.EngineType, pdRole(c)))
	return items
}

// pdRole names the worker's role in disaggregated prefill/decode.
func pdRole(c *config.Config) string {
	switch {
	case c.WorkerType != config.WorkerAggregated && c.WorkerType != "":
		return string(c.WorkerType) + " worker"
	case c.PDConnector() != nil:
		return "prefill and decode per request (" + c.PDConnector().KVConnector + ")"
	}
	return "aggregated (no P/D role)"
}

// textSources says which tokenizer and chat template the worker loaded,
// by the rule of the binary's loader: --tokenizer, else a --model
// directory with a tokenizer.json, else the built-in ones.
func (w *Worker) textSources() (tok, tmpl string) {
	c := w.cfg
	if w.files.model == nil {
		tok = "built-in"
		if c.Model != "" && c.Model != config.Default().Model {
			tok += " (" + strconv.Quote(c.Model) + " is no local tokenizer directory; --tokenizer DIR loads the real one)"
		}
	} else {
		dir := c.Tokenizer
		if dir == "" {
			dir = c.Model
		}
		tok = filepath.Join(dir, "tokenizer.json")
	}
	switch {
	case c.ChatTemplate != "" && fileExists(c.ChatTemplate):
		tmpl = c.ChatTemplate + " (--chat-template)"
	case c.ChatTemplate != "":
		tmpl = "inline (--chat-template)"
	case w.files.model != nil && w.files.chat != nil:
		tmpl = "the tokenizer's chat_template (tokenizer_config.json)"
	case w.files.model != nil:
		tmpl = "none (the tokenizer has none: chat requests get a 400, as in vLLM)"
	default:
		tmpl = "ChatML (built-in)"
	}
	return tok, tmpl
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// zmqEndpoint is the Dynamo-style endpoint of a port on the HTTP host.
func zmqEndpoint(host string, port int) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "*"
	}
	return "tcp://" + net.JoinHostPort(host, strconv.Itoa(port))
}

// rankRange names the endpoint of every DP rank: rank r adds r to a TCP
// port.
func rankRange(endpoint string, dp int) string {
	if dp <= 1 {
		return endpoint
	}
	i := strings.LastIndexByte(endpoint, ':')
	port, err := strconv.Atoi(endpoint[i+1:])
	if i < 0 || err != nil {
		return fmt.Sprintf("%s (+ rank, %d ranks)", endpoint, dp)
	}
	return fmt.Sprintf("%s…%d (rank r on port + r)", endpoint, port+dp-1)
}

// thousands formats n with thousands separators.
// KVPoolShape describes one DP rank's KV pool as the banners print it:
// "16,384 blocks × 16 tokens = 262,144 tokens per DP rank", or SGLang's
// "262,144 pages × 1 token = …" (its unit is a page, as /ui says). serve's
// banner and a fleet's summary share it so the two read alike.
func KVPoolShape(c *config.Config) string {
	blocks, size := c.NumGPUBlocks, c.EffectiveBlockSize()
	unit, tokens := "blocks", "tokens"
	if c.EngineType == engine.EngineSGLang {
		unit = "pages"
	}
	if size == 1 {
		tokens = "token"
	}
	return fmt.Sprintf("%s %s × %d %s = %s tokens per DP rank", thousands(blocks), unit, size, tokens, thousands(blocks*size))
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// printBanner writes the startup banner to stderr and logs it as one
// structured line.
func (w *Worker) printBanner(addr, baseURL string) {
	items := w.bannerItems(baseURL)
	attrs := []any{"addr", addr, "port", w.port, "model", w.cfg.ServedName(), "engine_type", w.cfg.EngineType, "dp_size", w.cfg.DPSize}
	for _, it := range items {
		attrs = append(attrs, it.key, it.value)
	}
	w.log.Info("listening", attrs...)
	var b strings.Builder
	fmt.Fprintf(&b, "listening on %s\n", baseURL)
	switch w.opts.Banner {
	case BannerCompact:
		var parts []string
		for _, it := range items {
			switch it.key {
			case "kv_events", "kv_replay", "fpm", "bootstrap":
				parts = append(parts, it.label+" "+it.value)
			}
		}
		if len(parts) > 0 {
			fmt.Fprintf(&b, "  %s\n", strings.Join(parts, "; "))
		}
	default:
		for _, it := range items {
			fmt.Fprintf(&b, "  %-13s %s\n", it.label, it.value)
		}
	}
	// One write, so that the block is not interleaved with other lines.
	_, _ = io.WriteString(w.opts.Stderr, b.String())
}
