package config

import (
	"slices"
	"testing"
)

// TestLoad_ProblemsNameWhatTheUserWrote: a problem names the flag typed on
// the command line, or the key as spelled in the file with the file and
// line; an unknown key gets a suggestion.
func TestLoad_ProblemsNameWhatTheUserWrote(t *testing.T) {
	dashes := writeFile(t, "c.yaml", "# the KV events\nzmq-replay-port: 5558\nmax-num-seqs: 0\n")
	underscores := writeFile(t, "u.yaml", "enable_lora: false\nlora_modules:\n  - a=/x\nmax_modle_len: 5\n")
	for _, tc := range []struct {
		name string
		opts LoadOptions
		want []string
	}{
		{"flags", flagOptions(t, "--zmq-replay-port", "5558", "--lora-modules", "a=/x", "--max-num-seqs", "0"), []string{
			"--zmq-replay-port requires --zmq-kv-events-port",
			"--lora-modules needs --enable-lora",
			"--max-num-seqs must be between 1 and 65536, got 0",
		}},
		{"a file with dashes", LoadOptions{ConfigPath: dashes}, []string{
			"--config " + dashes + ":2: zmq-replay-port requires zmq-kv-events-port",
			"--config " + dashes + ":3: max-num-seqs must be between 1 and 65536, got 0",
		}},
		{"a file with underscores", LoadOptions{ConfigPath: underscores}, []string{
			"--config " + underscores + `:4: unknown field "max_modle_len" (did you mean "max_model_len"?)`,
			"--config " + underscores + ":2: lora_modules needs enable_lora",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probs := problemsOf(t, noEnv(tc.opts))
			for _, w := range tc.want {
				if !slices.Contains(probs, w) {
					t.Errorf("problems %q\nwant a line %q", probs, w)
				}
			}
		})
	}
}

func TestReplaceKey_WholeWordsOnly(t *testing.T) {
	for _, tc := range []struct{ msg, key, with, want string }{
		{"dp_size 2", "dp_size", "--data-parallel-size", "--data-parallel-size 2"},
		{"dp_size_x and dp_size", "dp_size", "-dp", "dp_size_x and -dp"},
		{"kv_events_config.endpoint and kv_events_config.", "kv_events_config", "--kv-events-config", "kv_events_config.endpoint and --kv-events-config."},
		{"sglang.page_size", "page_size", "--x", "sglang.page_size"},
	} {
		if got := replaceKey(tc.msg, tc.key, tc.with); got != tc.want {
			t.Errorf("replaceKey(%q, %q) = %q, want %q", tc.msg, tc.key, got, tc.want)
		}
	}
}
