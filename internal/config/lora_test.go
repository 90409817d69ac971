package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
)

func TestLoRAModulesTakeSeveralValuesAfterOneFlag(t *testing.T) {
	cfg, _ := mustLoad(t, flagOptions(t, "--enable-lora",
		"--lora-modules", "sql=/adapters/sql", `{"name":"chat","path":"/adapters/chat","base_model_name":"mocker-model"}`,
		"--max-loras", "2", "--lora-modules=extra=/x"))
	want := []LoRAModule{
		{Name: "sql", Path: "/adapters/sql"},
		{Name: "chat", Path: "/adapters/chat", BaseModelName: "mocker-model"},
		{Name: "extra", Path: "/x"},
	}
	if got := cfg.LoRAModuleList(); !slices.Equal(got, want) {
		t.Errorf("modules %+v, want %+v", got, want)
	}
	if cfg.MaxLoRAs != 2 {
		t.Errorf("max_loras %d", cfg.MaxLoRAs)
	}
}

func TestRewriteArgsExpandsLoRAModules(t *testing.T) {
	got := RewriteArgs([]string{"--lora-modules", "a=/a", "b=/b", "--port", "1", "c=/c"})
	want := []string{"--lora-modules", "a=/a", "--lora-modules", "b=/b", "--port", "1", "c=/c"}
	if !slices.Equal(got, want) {
		t.Errorf("RewriteArgs = %q, want %q", got, want)
	}
}

func TestLoRAEngineConfig(t *testing.T) {
	cfg, _ := mustLoad(t, flagOptions(t, "--enable-lora", "--max-loras", "2", "--max-cpu-loras", "4", "--lora-load-time-ms", "2.5"))
	want := engine.LoRAConfig{MaxLoRAs: 2, MaxCPULoRAs: 4, LoadTime: 2500 * time.Microsecond}
	if got := cfg.EngineConfig(nil).LoRA; got != want {
		t.Errorf("engine LoRA %+v, want %+v", got, want)
	}
	off, _ := mustLoad(t, flagOptions(t, "--max-loras", "3"))
	if got := off.EngineConfig(nil).LoRA; got.Enabled() {
		t.Errorf("LoRA enabled without --enable-lora: %+v", got)
	}
}

func TestRuntimeLoRAUpdatingFollowsVLLMsVariable(t *testing.T) {
	for _, tt := range []struct {
		env  string
		set  bool
		want bool
	}{{"1", true, true}, {" True ", true, true}, {"0", true, false}, {"yes", true, false}, {"", false, false}} {
		env := func(k string) (string, bool) {
			if k == "VLLM_ALLOW_RUNTIME_LORA_UPDATING" && tt.set {
				return tt.env, true
			}
			return "", false
		}
		cfg, _ := mustLoad(t, LoadOptions{LookupEnv: env})
		if cfg.AllowRuntimeLoRAUpdating != tt.want {
			t.Errorf("VLLM_ALLOW_RUNTIME_LORA_UPDATING=%q: allowed %v, want %v", tt.env, cfg.AllowRuntimeLoRAUpdating, tt.want)
		}
	}
	cfg, _ := mustLoad(t, flagOptions(t, "--allow-runtime-lora-updating"))
	if !cfg.AllowRuntimeLoRAUpdating {
		t.Error("the flag did not enable runtime updating")
	}
}

func TestLoRABadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"max_loras below 1", []string{"--enable-lora", "--max-loras", "0"}, "--max-loras must be >= 1, got 0"},
		{"max_cpu_loras below max_loras", []string{"--enable-lora", "--max-loras", "3", "--max-cpu-loras", "2"}, "--max-cpu-loras (2) must be >= --max-loras (3)"},
		{"rank not one of vLLM's", []string{"--enable-lora", "--max-lora-rank", "24"}, "--max-lora-rank must be one of 1, 8, 16, 32, 64, 128, 256, 320, 512, got 24"},
		{"adapter named like the base model", []string{"--enable-lora", "--lora-modules", "mocker-model=/p"}, `adapter name "mocker-model" is a served model name`},
		{"adapter listed twice", []string{"--enable-lora", "--lora-modules", "a=/p", "a=/q"}, `adapter "a" is listed more than once`},
		{"bad JSON", []string{"--enable-lora", "--lora-modules", `{"name":`}, "invalid JSON format for --lora-modules"},
		{"unknown JSON field", []string{"--enable-lora", "--lora-modules", `{"name":"a","path":"/p","rank":8}`}, `unknown field "rank"`},
		{"two equals signs", []string{"--enable-lora", "--lora-modules", "a=/p=q"}, "invalid format for --lora-modules: a=/p=q"},
		{"no path", []string{"--enable-lora", "--lora-modules", "a="}, `--lora-modules entry "a=" needs a name and a path`},
		{"modules without enable_lora", []string{"--lora-modules", "a=/p"}, "--lora-modules needs --enable-lora"},
		{"negative load time", []string{"--enable-lora", "--lora-load-time-ms", "-1"}, "--lora-load-time-ms must be a finite number >= 0, got -1"},
		{"unknown path check", []string{"--enable-lora", "--lora-path-check", "maybe"}, "Invalid --lora-path-check 'maybe'. Must be 'none' or 'exists'."},
		{"data parallel", []string{"--enable-lora", "-dp", "2"}, "--enable-lora is not supported with --data-parallel-size > 1, got 2"},
		{"trtllm", []string{"--enable-lora", "--engine-type", "trtllm"}, "--enable-lora is supported with --engine-type vllm only, got trtllm"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probs := loadProblems(t, flagOptions(t, tt.args...))
			if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems %q, want one containing %q", probs, tt.want)
			}
		})
	}
}
