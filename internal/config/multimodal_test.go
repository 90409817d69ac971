package config

import (
	"maps"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// The multimodal flags as vLLM's command lines spell them, and their
// value errors.
func TestMultimodalFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want map[string]int
	}{
		{[]string{"--limit-mm-per-prompt", `{"image":2,"video":0}`}, map[string]int{"image": 2, "video": 0}},
		{[]string{"--limit-mm-per-prompt", `{"video":{"count":1,"num_frames":32},"audio":3}`}, map[string]int{"video": 1, "audio": 3}},
		{nil, map[string]int{}},
	} {
		cfg := loadArgs(t, tc.args...)
		got, err := cfg.MMLimits()
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%v: limits %v %v, want %v", tc.args, got, err, tc.want)
		}
	}
	cfg := loadArgs(t, "--mm-encoder-tp-mode", "data", "--tensor-parallel-size", "4", "--disable-chunked-mm-input",
		"--mm-encoder-ms-per-token", "0.5", "--allowed-media-domains", "a.com,b.org")
	if mm := cfg.EngineConfig(nil).MM; mm != (engine.MMConfig{EncoderMsPerToken: 0.5, EncoderDataParallel: 4, DisableChunkedMMInput: true}) {
		t.Errorf("engine MM %+v", mm)
	}
	if d := cfg.AllowedMediaDomains; len(d) != 2 || d[1] != "b.org" {
		t.Errorf("domains %v", d)
	}
	if mm := loadArgs(t, "--tensor-parallel-size", "2").EngineConfig(nil).MM; mm.EncoderWeightShards != 2 || mm.EncoderDataParallel != 0 {
		t.Errorf("weights mode %+v", mm)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--limit-mm-per-prompt", `{"image":-1}`}, "limit_mm_per_prompt.image: must be a non-negative integer"},
		{[]string{"--limit-mm-per-prompt", `{"pdf":1}`}, `unknown modality "pdf"`},
		{[]string{"--limit-mm-per-prompt", `{"video":{"num_frames":2}}`}, `needs "count"`},
		{[]string{"--mm-encoder-tp-mode", "pipeline"}, "Invalid --mm-encoder-tp-mode 'pipeline'. Must be 'weights' or 'data'."},
		{[]string{"--max-media-item-bytes", "0"}, "--max-media-item-bytes must be >= 1, got 0"},
	} {
		_, _, err := Load(flagOptions(t, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.msg)
		}
	}
}

// --mm-processor-kwargs is the mock's own flag (vLLM's spelling, and a
// config key): a JSON object, "None" or null unsets it, anything else is
// a startup error.
func TestMMProcessorKwargsFlag(t *testing.T) {
	cfg := loadArgs(t, "--mm-processor-kwargs", `{"max_pixels": 401408, "images_kwargs": {"min_pixels": 3136}}`)
	if got := string(cfg.MMProcessorKwargsJSON()); got != `{"images_kwargs":{"min_pixels":3136},"max_pixels":401408}` {
		t.Errorf("kwargs %s", got)
	}
	for _, none := range []string{"None", "null"} {
		if b := loadArgs(t, "--mm-processor-kwargs", none).MMProcessorKwargsJSON(); b != nil {
			t.Errorf("%s: %s, want unset", none, b)
		}
	}
	if b := loadArgs(t).MMProcessorKwargsJSON(); b != nil {
		t.Errorf("default %s", b)
	}
	for _, bad := range []string{`[1]`, `{"max_pixels":`, `401408`} {
		if _, _, err := Load(flagOptions(t, "--mm-processor-kwargs", bad)); err == nil || !strings.Contains(err.Error(), "--mm-processor-kwargs: ") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
