package chattemplate

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
)

// twentyMessages is a 20-message Qwen3 conversation: a system prompt, then
// user/assistant turns with one tool-call round, plus two tools.
func twentyMessages() Input {
	messages := []string{`{"role": "system", "content": "You are a helpful assistant."}`}
	for len(messages) < 15 {
		messages = append(messages,
			`{"role": "user", "content": `+quote(sampleTexts[len(messages)%len(sampleTexts)]+" Tell me more about the weather patterns in Zürich over the last decade.")+`}`,
			`{"role": "assistant", "content": "Certainly. Over the last decade Zürich has seen warmer summers, milder winters and more intense rain events in spring and autumn."}`)
	}
	messages = append(messages,
		`{"role": "user", "content": "And right now?"}`,
		`{"role": "assistant", "content": "", "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}]}`,
		`{"role": "tool", "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}", "tool_call_id": "call_0"}`,
		`{"role": "assistant", "content": "It is 21.5 °C with a clear sky."}`,
		`{"role": "user", "content": "Thanks! Anything else I should know?"}`)
	return Input{
		Messages:            json.RawMessage("[" + strings.Join(messages, ",") + "]"),
		Tools:               json.RawMessage("[" + sampleTools[0] + "," + sampleTools[1] + "]"),
		AddGenerationPrompt: true,
		Kwargs:              map[string]json.RawMessage{"enable_thinking": json.RawMessage("false")},
		EOSToken:            "<|im_end|>",
	}
}

func BenchmarkRenderQwen3TwentyMessages(b *testing.B) {
	tmpl := mustParse(b, qwen3Like(b))
	in := twentyMessages()
	if n := strings.Count(string(in.Messages), `"role"`); n != 20 {
		b.Fatalf("%d messages, want 20", n)
	}
	if _, err := tmpl.Render(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpuStart := processCPU()
	for b.Loop() {
		if _, err := tmpl.Render(in); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuStart)
}

// processCPU is the process's user+system CPU time. On a shared machine
// wall time per op includes waiting for a core; CPU time per op is the
// cost of the work itself (GC included).
func processCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkParseQwen3(b *testing.B) {
	source := qwen3Like(b)
	b.ReportAllocs()
	cpuStart := processCPU()
	for b.Loop() {
		if _, err := Parse(source); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpuStart)
}
