package api

import (
	"bytes"
	"encoding/json"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

// agentLoop is one loop of testdata/agents/loops.mjs: the usage of each
// model call in order, how many tools it ran and how it ended.
type agentLoop struct {
	Name     string `json:"name"`
	Requests []struct {
		Input  int    `json:"input"`
		Output int    `json:"output"`
		Finish string `json:"finish"`
	} `json:"requests"`
	ToolCalls int    `json:"toolCalls"`
	Text      string `json:"text"`
	Finish    string `json:"finish"`
	MaxTokens int    `json:"maxTokens"` // the loop's max tokens per answer (0 = none set)
	LastAgent string `json:"lastAgent"` // Agents SDK: the agent that answered
	Handoffs  int    `json:"handoffs"`
	HTTP      []struct {
		Status   int     `json:"status"`
		Thread   *string `json:"thread"`
		Messages int     `json:"messages"`
	} `json:"http"` // Anthropic: every request the SDK sent
}

// maxAgentTurns is the most model calls a loop may take: a first answer
// that calls tools, one more round now and then, the answer (and the
// triage turn of a handoff).
const maxAgentTurns = 4

// The agent frameworks people use, each driving complete loops against a
// server with the default flags plus --enable-auto-tool-choice
// --tool-call-parser hermes (and no simulated delay, to stay quick): every
// loop ends with a text answer within a few turns, its usage grows from
// turn to turn, and the answer is not truncated. The scenarios of a
// framework run in one node process; the frameworks run in parallel.
func TestAgentLoops_FrameworksEndWithAnAnswer(t *testing.T) {
	modules := testutil.NodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.SkipOrFail(t, "node not found: %v", err)
	}
	env := agentServer(t, nil)
	frameworks := map[string][]string{
		"vercel-ai": {"ai_generate_text", "ai_stream_text", "ai_generate_text_responses", "ai_stream_text_responses",
			"ai_generate_text_anthropic", "ai_stream_text_anthropic", "ai_generate_object"},
		"langchain":     {"langchain_bind_tools", "langchain_bind_tools_stream", "langchain_structured_output"},
		"openai-agents": {"agents_responses", "agents_responses_stream", "agents_chat", "agents_chat_stream", "agents_handoff"},
		"anthropic":     {"anthropic_tool_runner", "anthropic_tool_runner_stream"},
		"openai":        {"openai_run_tools", "openai_run_tools_stream"},
	}
	for name, scenarios := range frameworks {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for sc, loops := range runAgentLoops(t, node, modules, env, scenarios) {
				checkAgentLoops(t, sc, loops)
			}
		})
	}
}

// With --tool-call-probability 1 every first turn calls tools, and the
// loops still end: the answer after a tool result follows
// --tool-call-after-result-probability (the report: at 1 every
// framework ran to its turn cap).
func TestAgentLoops_EveryFirstTurnCallsAndTheLoopsStillEnd(t *testing.T) {
	modules := testutil.NodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.SkipOrFail(t, "node not found: %v", err)
	}
	env := agentServer(t, map[string]any{"tool_call_probability": 1})
	for sc, loops := range runAgentLoops(t, node, modules, env, []string{"openai_run_tools", "anthropic_tool_runner"}) {
		checkAgentLoops(t, sc, loops)
		for _, l := range loops {
			if l.ToolCalls == 0 || len(l.Requests) < 2 {
				t.Errorf("%s / %s: %d tool calls in %d model calls, want a tool round first", sc, l.Name, l.ToolCalls, len(l.Requests))
			}
		}
	}
}

// agentServer is a server with the default flags plus
// --enable-auto-tool-choice --tool-call-parser hermes, no simulated delay
// and overlay.
func agentServer(t *testing.T, overlay map[string]any) *testEnv {
	t.Helper()
	o := map[string]any{"enable_auto_tool_choice": true, "tool_call_parser": "hermes", "speedup_ratio": "inf"}
	maps.Copy(o, overlay)
	cfg, _, err := config.Load(testcfg.Options(o))
	if err != nil {
		t.Fatal(err)
	}
	return startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r} }, settings.Deps{Now: fixedNow, Version: "test-version"})
}

// runAgentLoops runs scenarios of testdata/agents/loops.mjs in one node
// process and returns each scenario's loops; a scenario that failed fails
// the test.
func runAgentLoops(t *testing.T, node, modules string, env *testEnv, scenarios []string) map[string][]agentLoop {
	t.Helper()
	script, _ := filepath.Abs(filepath.Join("testdata", "agents", "loops.mjs"))
	cmd := exec.Command(node, append([]string{script, env.URL}, scenarios...)...)
	cmd.Env = append(cmd.Environ(), "SDK_MODULES="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var res map[string]struct {
		Error string      `json:"error"`
		Loops []agentLoop `json:"loops"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node: %v %v\n%.4000s\n%s", runErr, err, out, stderr.String())
	}
	loops := map[string][]agentLoop{}
	for _, sc := range scenarios {
		r, ok := res[sc]
		switch {
		case !ok:
			t.Errorf("%s: no result", sc)
		case r.Error != "":
			t.Errorf("%s: %s", sc, r.Error)
		default:
			loops[sc] = r.Loops
		}
	}
	return loops
}

// checkAgentLoops checks the loops of one scenario.
func checkAgentLoops(t *testing.T, scenario string, loops []agentLoop) {
	t.Helper()
	if len(loops) == 0 {
		t.Errorf("%s: no loops", scenario)
		return
	}
	structured := strings.Contains(scenario, "object") || strings.Contains(scenario, "structured")
	toolCalls, multiTurn := 0, 0
	for _, l := range loops {
		where := scenario + " / " + l.Name
		turns := len(l.Requests)
		if turns == 0 || turns > maxAgentTurns {
			t.Errorf("%s: %d model calls, want 1..%d", where, turns, maxAgentTurns)
			continue
		}
		if strings.TrimSpace(l.Text) == "" {
			t.Errorf("%s: empty answer", where)
		}
		// Not truncated: the loop's answer ended naturally.
		if !slices.Contains([]string{"stop", "end_turn", "completed"}, l.Finish) {
			t.Errorf("%s: ends with %q", where, l.Finish)
		}
		last := l.Requests[turns-1]
		if l.MaxTokens > 0 && last.Output >= l.MaxTokens {
			t.Errorf("%s: the answer took all %d tokens", where, l.MaxTokens)
		}
		// Usage grows: each call's prompt holds the conversation so far.
		for k := 1; k < turns; k++ {
			if l.Requests[k].Input <= l.Requests[k-1].Input {
				t.Errorf("%s: input tokens %d after %d (call %d): the history did not grow", where, l.Requests[k].Input, l.Requests[k-1].Input, k+1)
			}
		}
		for k, r := range l.Requests {
			if r.Input <= 0 || r.Output <= 0 {
				t.Errorf("%s: call %d reports usage %d/%d", where, k+1, r.Input, r.Output)
			}
		}
		toolCalls += l.ToolCalls
		if turns > 1 {
			multiTurn++
		}
		if scenario == "agents_handoff" && (l.LastAgent != "weather_agent" || l.Handoffs != 1) {
			t.Errorf("%s: answered by %q after %d handoffs, want weather_agent after 1", where, l.LastAgent, l.Handoffs)
		}
		if strings.HasPrefix(scenario, "anthropic") {
			checkThreadFallback(t, where, l)
		}
	}
	if !structured && (toolCalls == 0 || multiTurn == 0) {
		t.Errorf("%s: %d tool calls, %d loops of more than one call: no loop ran a tool", scenario, toolCalls, multiTurn)
	}
}

// checkThreadFallback checks what the Anthropic tool runner sent: it opens
// a message thread (SDK 1.15's default), the server refuses it with
// thread_unsupported_request, and the runner continues without a thread,
// sending the whole history on every later turn.
func checkThreadFallback(t *testing.T, where string, l agentLoop) {
	t.Helper()
	if len(l.HTTP) != len(l.Requests)+1 {
		t.Errorf("%s: %d requests sent for %d answers, want the refused thread and one per answer", where, len(l.HTTP), len(l.Requests))
		return
	}
	if first := l.HTTP[0]; first.Status != 400 || first.Thread == nil || *first.Thread != "create" {
		t.Errorf("%s: first request status %d thread %s, want 400 to thread create", where, first.Status, threadOf(first.Thread))
	}
	for k, h := range l.HTTP[1:] {
		if h.Status != 200 || h.Thread != nil {
			t.Errorf("%s: request %d status %d thread %s, want 200 without a thread", where, k+2, h.Status, threadOf(h.Thread))
		}
		// The user message, then an assistant call and its result per round.
		if h.Messages != 1+2*k {
			t.Errorf("%s: request %d sent %d messages, want the full history of %d", where, k+2, h.Messages, 1+2*k)
		}
	}
}

func threadOf(thread *string) string {
	if thread == nil {
		return "none"
	}
	return *thread
}

// A Messages request with a thread (Anthropic's message threads) is
// refused before any other check, streamed or not, in the shape the
// Anthropic SDK recognises as "threads unsupported": 400
// invalid_request_error with details.error_code thread_unsupported_request.
// thread null is no thread.
func TestMessages_ThreadRefusedAsAnthropicDoes(t *testing.T) {
	env := startServer(t, nil)
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"thread: message threads are not available on this server; ` +
		`send the full conversation in messages without thread","details":{"error_code":"thread_unsupported_request"}}}`
	for _, body := range []string{
		`{"model":"mocker-model","max_tokens":64,"messages":[{"role":"user","content":"Hi"}],"thread":{"type":"create"}}`,
		`{"model":"mocker-model","max_tokens":64,"stream":true,"messages":[],"thread":{"type":"continue","previous_message_id":"msg_1"}}`,
		`{"max_tokens":-1,"thread":{"type":"create"}}`,
	} {
		r := env.post("/v1/messages", body)
		if r.Status != 400 || strings.TrimSpace(r.Body) != want {
			t.Errorf("%s:\nstatus %d %s\nwant 400 %s", body, r.Status, r.Body, want)
		}
	}
	r := env.post("/v1/messages", `{"model":"mocker-model","max_tokens":4,"messages":[{"role":"user","content":"Hi"}],"thread":null}`)
	if r.Status != 200 {
		t.Errorf("thread null: status %d %s", r.Status, r.Body)
	}
}
