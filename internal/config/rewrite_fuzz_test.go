package config

import (
	"strings"
	"testing"
)

// Any command line is rewritten and parsed without a panic: bad input is a
// parse or load error, never a crash.
func FuzzRewriteAndParse(f *testing.F) {
	for _, seed := range []string{
		"-tp 2 --dtype bfloat16 --trust-remote-code",
		"--served-model-name a b c -O3 --hf-token",
		"--compilation-config.mode 3 --x.y+ 1,2 -- -dp",
		"--.x 1 --a..b= -O -= --=x -",
		"--kv-events-config.topic t --enable-lora --no-enable-lora -dp=2",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		fs, err := parseVLLMArgs(args...)
		if err != nil {
			_ = ExplainFlagError(fs, err)
			return
		}
		_ = NoEffectFlags(fs)
		opts := noEnv(OptionsFromFlags(fs))
		_, _, _ = Load(opts)
	})
}
