package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// With speculative decoding (k = 3, every draft accepted) a 12-token answer
// takes a prefill pass and 3 decode passes, and a streaming client receives
// each pass's tokens together, in one chunk, as vLLM streams one chunk per
// engine step: 1 token, then 4, 4, and the last 3 with the finish reason.
// The passes are 20 + 40 ms, then 40 × (1 + 0.1 × 3) = 52 ms each.
func TestStream_SpeculativePassTokensArriveTogether(t *testing.T) {
	env := startServer(t, map[string]any{
		"speedup_ratio":      1,
		"timing_model":       "fixed",
		"fixed_prefill_ms":   20,
		"fixed_decode_ms":    40,
		"speculative_config": `{"method":"eagle","num_speculative_tokens":3,"acceptance_rate":1.0}`,
	})
	start := time.Now()
	_, evs, err := streamRaw(t, env, helloChat+`,"max_tokens":12,"ignore_eos":true,"stream":true,"return_token_ids":true}`)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	var counts []int
	var at []time.Duration
	text := ""
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			continue
		}
		if n := tokenCount(t, ev.data); n > 0 {
			counts = append(counts, n)
			at = append(at, ev.at.Sub(start))
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
				t.Fatal(err)
			}
			text += c.Choices[0].Delta.Content
		}
	}
	if len(counts) != 4 || counts[0] != 1 || counts[1] != 4 || counts[2] != 4 || counts[3] != 3 {
		t.Fatalf("tokens per chunk %v, want [1 4 4 3]", counts)
	}
	if !strings.Contains(evs[len(evs)-2].data, `"finish_reason":"length"`) {
		t.Errorf("last chunk %s, want the finish reason with the last pass's tokens", evs[len(evs)-2].data)
	}
	// Each chunk arrives at its own pass deadline: 60, 112, 164, 216 ms
	// after the request, plus scheduling noise on a shared machine (the grouping
	// above does not depend on it: a chunk holds the tokens of one deadline).
	for i, want := range []time.Duration{60, 112, 164, 216} {
		want *= time.Millisecond
		if at[i] < want || at[i] > want+400*time.Millisecond {
			t.Errorf("chunk %d arrived at %v, want %v (+ at most 400ms)", i+1, at[i], want)
		}
	}
	// The same request without streaming has the same text.
	r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":12,"ignore_eos":true}`)
	var full struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(r.Body), &full); err != nil || full.Choices[0].Message.Content != text {
		t.Errorf("non-streaming text %q (err %v), streamed %q", full.Choices[0].Message.Content, err, text)
	}
}

// With reasoning framing, a pass's tokens that cross from reasoning to
// content are split into a reasoning chunk and a content chunk, also in the
// last pass; the streamed texts equal the non-streamed answer's.
func TestStream_SpeculativePassesKeepReasoningAndContentApart(t *testing.T) {
	for _, ratio := range []string{"0.3", "0.5", "0.75", "0.9"} {
		t.Run(ratio, func(t *testing.T) {
			env := startServer(t, map[string]any{
				"reasoning":          `{"thinking_ratio":` + ratio + `}`,
				"speculative_config": `{"method":"mtp","num_speculative_tokens":4,"acceptance_rate":1.0}`,
			})
			_, evs, err := streamRaw(t, env, helloChat+`,"max_tokens":16,"ignore_eos":true,"stream":true}`)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			var reasoning, content string
			for _, ev := range evs {
				if ev.data == "[DONE]" {
					continue
				}
				var c struct {
					Choices []struct {
						Delta map[string]any `json:"delta"`
					} `json:"choices"`
				}
				if err := json.Unmarshal([]byte(ev.data), &c); err != nil {
					t.Fatal(err)
				}
				d := c.Choices[0].Delta
				r, hasR := d["reasoning"].(string)
				ct, _ := d["content"].(string)
				if hasR && ct != "" {
					t.Errorf("chunk mixes reasoning and content: %s", ev.data)
				}
				reasoning += r
				content += ct
			}
			resp := env.post("/v1/chat/completions", helloChat+`,"max_tokens":16,"ignore_eos":true}`)
			var full struct {
				Choices []struct {
					Message struct {
						Content   string `json:"content"`
						Reasoning string `json:"reasoning"`
					} `json:"message"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(resp.Body), &full); err != nil {
				t.Fatal(err)
			}
			m := full.Choices[0].Message
			if reasoning != m.Reasoning || content != m.Content || reasoning == "" || content == "" {
				t.Errorf("streamed reasoning %q content %q, non-streamed %q %q", reasoning, content, m.Reasoning, m.Content)
			}
		})
	}
}
