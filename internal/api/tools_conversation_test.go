package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// agentSurface builds a request of one surface for a conversation of
// `rounds` tool rounds (each an assistant call and its result), and reads
// how many tool calls its answer makes.
type agentSurface struct {
	name  string
	path  string
	body  func(rounds, seed int, extra string) string
	calls func(t *testing.T, body string) int
}

// A tool round in each surface's own form: an assistant call and its
// result (chat tool message, Responses function_call_output item,
// Anthropic tool_result block).
var agentSurfaces = []agentSurface{
	{"chat", "/v1/chat/completions", func(rounds, seed int, extra string) string {
		msgs := []string{`{"role":"user","content":"Plan my week"}`}
		for k := range rounds {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":"c%d","type":"function",`+
				`"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}}]}`, k),
				fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":"sunny, %d degrees"}`, k, 20+k))
		}
		return `{"messages":[` + strings.Join(msgs, ",") + `],"tools":` + weatherTools + fmt.Sprintf(`,"seed":%d`, seed) + extra + `}`
	}, func(t *testing.T, body string) int {
		r := nonStreamResult(t, body)
		if len(r.Calls) == 0 && (r.Content == nil || r.Finish == "tool_calls") {
			t.Fatalf("neither calls nor text: %s", body)
		}
		return len(r.Calls)
	}},
	{"responses", "/v1/responses", func(rounds, seed int, extra string) string {
		items := []string{`{"role":"user","content":"Plan my week"}`}
		for k := range rounds {
			items = append(items, fmt.Sprintf(`{"type":"function_call","call_id":"c%d","name":"get_weather",`+
				`"arguments":"{\"city\":\"Paris\",\"unit\":\"celsius\"}"}`, k),
				fmt.Sprintf(`{"type":"function_call_output","call_id":"c%d","output":"sunny, %d degrees"}`, k, 20+k))
		}
		return `{"model":"mocker-model","input":[` + strings.Join(items, ",") + `],"tools":` + responsesTools(weatherTools) +
			fmt.Sprintf(`,"seed":%d`, seed) + extra + `}`
	}, func(t *testing.T, body string) int {
		var r struct {
			Status string `json:"status"`
			Output []struct {
				Type string `json:"type"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || r.Status != "completed" && r.Status != "incomplete" {
			t.Fatalf("%v: %s", err, body)
		}
		calls := 0
		for _, o := range r.Output {
			if o.Type == "function_call" {
				calls++
			}
		}
		return calls
	}},
	{"messages", "/v1/messages", func(rounds, seed int, extra string) string {
		msgs := []string{`{"role":"user","content":"Plan my week"}`}
		for k := range rounds {
			msgs = append(msgs, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":"c%d","name":"get_weather",`+
				`"input":{"city":"Paris","unit":"celsius"}}]}`, k),
				fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c%d","content":"sunny, %d degrees"}]}`, k, 20+k))
		}
		// Messages has no seed field: the conversation alone seeds it, so
		// the seed goes into the first user message.
		msgs[0] = fmt.Sprintf(`{"role":"user","content":"Plan my week (%d)"}`, seed)
		return `{"model":"mocker-model","max_tokens":2000,"messages":[` + strings.Join(msgs, ",") + `],"tools":` +
			anthropicTools(weatherTools) + extra + `}`
	}, func(t *testing.T, body string) int {
		var r struct {
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type string `json:"type"`
			} `json:"content"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		calls := 0
		for _, c := range r.Content {
			if c.Type == "tool_use" {
				calls++
			}
		}
		if (calls > 0) != (r.StopReason == "tool_use") {
			t.Fatalf("%d tool_use blocks, stop_reason %q", calls, r.StopReason)
		}
		return calls
	}},
}

// responsesTools and anthropicTools rewrite chat tools into the tools of
// the Responses and Messages surfaces.
func responsesTools(chatTools string) string {
	var tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(chatTools), &tools); err != nil {
		panic(err)
	}
	var out []string
	for _, tool := range tools {
		out = append(out, `{"type":"function","name":"`+tool.Function.Name+`","parameters":`+string(tool.Function.Parameters)+`}`)
	}
	return "[" + strings.Join(out, ",") + "]"
}

func anthropicTools(chatTools string) string {
	var tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(chatTools), &tools); err != nil {
		panic(err)
	}
	var out []string
	for _, tool := range tools {
		out = append(out, `{"name":"`+tool.Function.Name+`","input_schema":`+string(tool.Function.Parameters)+`}`)
	}
	return "[" + strings.Join(out, ",") + "]"
}

// tool_choice "auto" reads the conversation, the same on every surface:
// a first turn calls with --tool-call-probability (0.5), the turn after
// one tool round with --tool-call-after-result-probability (0.1), after two
// rounds with its square (0.01). A named or required choice always calls;
// parallel_tool_calls false never makes more than one call.
func TestToolCalls_AutoFollowsTheConversation(t *testing.T) {
	env := toolEnv(t, nil)
	const seeds = 200
	for _, s := range agentSurfaces {
		t.Run(s.name, func(t *testing.T) {
			for _, tt := range []struct {
				rounds int
				lo, hi int // turns of 200 that call
			}{{0, 70, 130}, {1, 6, 36}, {2, 0, 8}} {
				calling, parallel := 0, 0
				for seed := range seeds {
					r := env.post(s.path, s.body(tt.rounds, seed, ""))
					if r.Status != 200 {
						t.Fatalf("status %d: %s", r.Status, r.Body)
					}
					if n := s.calls(t, r.Body); n > 0 {
						calling++
						if n > 1 {
							parallel++
						}
					}
				}
				t.Logf("%s after %d rounds: %d of %d turns call tools (%d with parallel calls)", s.name, tt.rounds, calling, seeds, parallel)
				if calling < tt.lo || calling > tt.hi {
					t.Errorf("after %d rounds %d of %d turns call tools, want %d..%d", tt.rounds, calling, seeds, tt.lo, tt.hi)
				}
				if tt.rounds == 0 && parallel == 0 {
					t.Errorf("no first turn made parallel calls")
				}
			}
			forced := map[string]string{
				"chat":      `,"tool_choice":"required"`,
				"responses": `,"tool_choice":"required"`,
				"messages":  `,"tool_choice":{"type":"any"}`,
			}[s.name]
			single := map[string]string{
				"chat":      `,"parallel_tool_calls":false`,
				"responses": `,"parallel_tool_calls":false`,
				"messages":  `,"tool_choice":{"type":"auto","disable_parallel_tool_use":true}`,
			}[s.name]
			for seed := range 40 {
				if n := s.calls(t, env.post(s.path, s.body(2, seed, forced)).Body); n == 0 {
					t.Fatalf("seed %d: a required choice after two rounds made no call", seed)
				}
				if n := s.calls(t, env.post(s.path, s.body(0, seed, single)).Body); n > 1 {
					t.Fatalf("seed %d: %d calls without parallel tool calls", seed, n)
				}
			}
		})
	}
}

// The after-result probability is the flag's: 1 keeps a loop calling, 0
// answers every tool result in text, while first turns keep
// --tool-call-probability.
func TestToolCalls_AfterResultProbabilityFlag(t *testing.T) {
	for _, p := range []float64{0, 1} {
		env := toolEnv(t, map[string]any{"tool_call_probability": 1 - p, "tool_call_after_result_probability": p})
		for _, s := range agentSurfaces {
			for seed := range 20 {
				first := s.calls(t, env.post(s.path, s.body(0, seed, "")).Body) > 0
				after := s.calls(t, env.post(s.path, s.body(3, seed, "")).Body) > 0
				if first != (p == 0) || after != (p == 1) {
					t.Fatalf("%s seed %d with probabilities %v/%v: first turn calls %v, after three rounds %v", s.name, seed, 1-p, p, first, after)
				}
			}
		}
	}
}

// A fixed seed and conversation give the same decisions and calls on every
// run; the same seed in another conversation decides afresh.
func TestToolCalls_DecisionsDeterministicPerConversation(t *testing.T) {
	run := func() []string {
		env := toolEnv(t, map[string]any{"tool_call_after_result_probability": 0.5})
		var out []string
		for _, s := range agentSurfaces {
			for rounds := range 3 {
				for seed := range 16 {
					r := env.post(s.path, s.body(rounds, seed, ""))
					out = append(out, fmt.Sprintf("%s/%d/%d: %d %s", s.name, rounds, seed, s.calls(t, r.Body), stripVolatile(r.Body)))
				}
			}
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("run 2 differs:\n%s\n%s", a[i], b[i])
		}
	}
	// With one request seed, the turns of a conversation do not all decide
	// alike (before, a fixed seed repeated its first decision forever).
	env := toolEnv(t, map[string]any{"tool_call_probability": 0.5, "tool_call_after_result_probability": 0.5})
	varied := 0
	for seed := range 16 {
		var decisions []bool
		for rounds := range 4 {
			decisions = append(decisions, agentSurfaces[0].calls(t, env.post("/v1/chat/completions", agentSurfaces[0].body(rounds, seed, "")).Body) > 0)
		}
		if strings.Contains(fmt.Sprint(decisions), "true") && strings.Contains(fmt.Sprint(decisions), "false") {
			varied++
		}
	}
	if varied == 0 {
		t.Fatalf("no seed decided differently across the turns of its conversation")
	}
}

// volatileFields are the parts of an answer that differ between two runs
// of the same request: random response ids and timestamps.
var volatileFields = regexp.MustCompile(`"(id|item_id|created|created_at|completed_at)":("[^"]*"|[0-9.]+)`)

// stripVolatile removes volatileFields, keeping what the plan decides.
func stripVolatile(body string) string { return volatileFields.ReplaceAllString(body, "") }
