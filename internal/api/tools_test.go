package api

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/chattemplate"
	"github.com/mocker-server/mocker-server/internal/schemagen/schemagentest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// weatherTools are two functions with typed, nested, enum, $ref and format
// parameters.
const weatherTools = `[
 {"type":"function","function":{"name":"get_weather","description":"Weather for a city",
  "parameters":{"type":"object","properties":{
    "city":{"type":"string","minLength":2},
    "unit":{"type":"string","enum":["celsius","fahrenheit"]},
    "days":{"type":"integer","minimum":1,"maximum":14},
    "when":{"type":"string","format":"date-time"}},
   "required":["city","unit"],"additionalProperties":false}}},
 {"type":"function","function":{"name":"book_trip",
  "parameters":{"type":"object","properties":{
    "stops":{"type":"array","items":{"$ref":"#/$defs/stop"},"minItems":1,"maxItems":3},
    "traveler":{"anyOf":[{"type":"string","format":"email"},{"type":"null"}]}},
   "required":["stops","traveler"],
   "$defs":{"stop":{"type":"object","properties":{"name":{"type":"string"},"nights":{"type":"integer","minimum":0}},"required":["name","nights"]}}}}}
]`

// toolSchemas compiles each tool's parameters with the reference validator.
func toolSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	var tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(weatherTools), &tools); err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	for _, tool := range tools {
		out[tool.Function.Name] = referenceSchema(t, tool.Function.Parameters)
	}
	return out
}

// referenceSchema and referenceCheck validate with an independent
// implementation (santhosh-tekuri/jsonschema).
func referenceSchema(t testing.TB, schema []byte) *jsonschema.Schema {
	return schemagentest.Reference(t, schema)
}

func referenceCheck(s *jsonschema.Schema, instance string) error {
	return schemagentest.Check(s, instance)
}

// toolEnv is a server that allows auto tool choice.
func toolEnv(t *testing.T, overlay map[string]any) *testEnv {
	t.Helper()
	o := map[string]any{"enable_auto_tool_choice": true, "tool_call_parser": "hermes"}
	for k, v := range overlay {
		o[k] = v
	}
	return startServer(t, o)
}

// callOut is a tool call as a client assembles it.
type callOut struct {
	ID, Type, Name, Arguments string
}

// chatResult is a chat answer reduced to what tool-call tests compare.
type chatResult struct {
	Content          *string
	Calls            []callOut
	Finish           string
	CompletionTokens int
}

// String prints the result with its content (not the pointer).
func (r chatResult) String() string {
	content := "<null>"
	if r.Content != nil {
		content = *r.Content
	}
	return fmt.Sprintf("content %q calls %v finish %s tokens %d", content, r.Calls, r.Finish, r.CompletionTokens)
}

func nonStreamResult(t *testing.T, body string) chatResult {
	t.Helper()
	var resp struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Choices) != 1 {
		t.Fatalf("response %s: %v", body, err)
	}
	c := resp.Choices[0]
	out := chatResult{Content: c.Message.Content, Finish: c.FinishReason, CompletionTokens: resp.Usage.CompletionTokens}
	for _, tc := range c.Message.ToolCalls {
		out.Calls = append(out.Calls, callOut{tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments})
	}
	return out
}

// streamResult assembles a streamed answer (chat, or completions text) the
// way client accumulators do,
// checking vLLM's delta sequence on the way: each call opens with one delta
// carrying id, type "function", index and function.name, later deltas of
// the call carry only index and function.arguments.
func streamResult(t *testing.T, body string) chatResult {
	t.Helper()
	var out chatResult
	var content strings.Builder
	sawContent := false
	for _, ev := range sseEvents(t, body) {
		if ev == "[DONE]" {
			break
		}
		var chunk struct {
			Choices []struct {
				Text  *string `json:"text"` // completions
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    *int    `json:"index"`
						ID       *string `json:"id"`
						Type     *string `json:"type"`
						Function *struct {
							Name      *string `json:"name"`
							Arguments *string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev), &chunk); err != nil {
			t.Fatalf("chunk %s: %v", ev, err)
		}
		if chunk.Usage != nil {
			out.CompletionTokens = chunk.Usage.CompletionTokens
		}
		for _, ch := range chunk.Choices {
			for _, text := range []*string{ch.Delta.Content, ch.Text} {
				if text != nil && *text != "" {
					content.WriteString(*text)
					sawContent = true
				}
			}
			if ch.FinishReason != nil {
				out.Finish = *ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.Index == nil || tc.Function == nil {
					t.Fatalf("tool call delta without index or function: %s", ev)
				}
				k := *tc.Index
				switch {
				case k == len(out.Calls): // a new call: the opening delta
					if tc.ID == nil || tc.Type == nil || *tc.Type != "function" || tc.Function.Name == nil {
						t.Fatalf("first delta of call %d lacks id/type/name: %s", k, ev)
					}
					out.Calls = append(out.Calls, callOut{ID: *tc.ID, Type: *tc.Type, Name: *tc.Function.Name})
				case k == len(out.Calls)-1:
					if tc.ID != nil || tc.Type != nil || tc.Function.Name != nil {
						t.Fatalf("later delta of call %d repeats id/type/name: %s", k, ev)
					}
				default:
					t.Fatalf("delta for call %d after %d calls: %s", k, len(out.Calls), ev)
				}
				if tc.Function.Arguments != nil {
					out.Calls[k].Arguments += *tc.Function.Arguments
				}
			}
		}
	}
	if sawContent {
		s := content.String()
		out.Content = &s
	}
	return out
}

func chatBody(extra string) string {
	return `{"messages":[{"role":"user","content":"Plan my week"}],"tools":` + weatherTools + extra + `}`
}

// Tool calls for every tool_choice mode: arguments valid for the tool's
// schema, the same answer streamed and not, vLLM's content and
// finish_reason, and usage counting the tokens of the serialized calls.
func TestToolCalls_EveryChoiceValidAndStreamMatchesNonStream(t *testing.T) {
	env := toolEnv(t, map[string]any{"tool_call_probability": 1.0})
	schemas := toolSchemas(t)
	idPattern := regexp.MustCompile(`^chatcmpl-tool-[0-9a-f]{32}$`)
	tests := []struct {
		name, extra string
		wantFinish  string
		wantContent *string // nil = null
		named       string
	}{
		{"named", `,"tool_choice":{"type":"function","function":{"name":"book_trip"}}`, "stop", ptr(""), "book_trip"},
		{"required", `,"tool_choice":"required"`, "tool_calls", ptr(""), ""},
		{"auto", `,"tool_choice":"auto"`, "tool_calls", nil, ""},
		{"auto by default", ``, "tool_calls", nil, ""},
		{"single call", `,"tool_choice":"required","parallel_tool_calls":false`, "tool_calls", ptr(""), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			multi := false
			for seed := range 30 {
				extra := tt.extra + fmt.Sprintf(`,"seed":%d,"stream_options":{"include_usage":true}`, seed)
				streamed := env.post("/v1/chat/completions", chatBody(extra+`,"stream":true`))
				whole := env.post("/v1/chat/completions", chatBody(strings.Replace(extra, `,"stream_options":{"include_usage":true}`, "", 1)))
				if whole.Status != 200 || streamed.Status != 200 {
					t.Fatalf("status %d/%d: %s %s", whole.Status, streamed.Status, whole.Body, streamed.Body)
				}
				got, gotStream := nonStreamResult(t, whole.Body), streamResult(t, streamed.Body)
				if len(got.Calls) == 0 || got.Finish != tt.wantFinish {
					t.Fatalf("seed %d: %d calls, finish %q: %s", seed, len(got.Calls), got.Finish, whole.Body)
				}
				if (tt.wantContent == nil) != (got.Content == nil) || (got.Content != nil && *got.Content != *tt.wantContent) {
					t.Fatalf("seed %d: content %v, want %v", seed, got.Content, tt.wantContent)
				}
				if fmt.Sprint(got.Calls) != fmt.Sprint(gotStream.Calls) || gotStream.Finish != got.Finish ||
					gotStream.CompletionTokens != got.CompletionTokens || gotStream.Content != nil {
					t.Fatalf("seed %d: stream %+v differs from %+v", seed, gotStream, got)
				}
				for _, call := range got.Calls {
					if !idPattern.MatchString(call.ID) || call.Type != "function" {
						t.Fatalf("call id %q type %q", call.ID, call.Type)
					}
					if tt.named != "" && call.Name != tt.named {
						t.Fatalf("named choice called %q", call.Name)
					}
					if err := referenceCheck(schemas[call.Name], call.Arguments); err != nil {
						t.Fatalf("seed %d: %s(%s): %v", seed, call.Name, call.Arguments, err)
					}
				}
				if strings.Contains(tt.extra, "parallel_tool_calls\":false") && len(got.Calls) != 1 {
					t.Fatalf("parallel_tool_calls false made %d calls", len(got.Calls))
				}
				multi = multi || len(got.Calls) > 1
			}
			if tt.named == "" && !strings.Contains(tt.extra, "parallel") && !multi {
				t.Errorf("30 seeds never made parallel calls")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// The completion tokens of a call are the tokens of its serialized text
// (plus the end-of-sequence token), what a model would have generated:
// longer arguments, more tokens.
func TestToolCalls_UsageCountsTheSerializedCall(t *testing.T) {
	env := toolEnv(t, nil)
	r := nonStreamResult(t, env.post("/v1/chat/completions", chatBody(`,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"seed":4`)).Body)
	args := r.Calls[0].Arguments
	tok := jsonOf(t, env.post("/tokenize", `{"prompt":`+strconvQuote(args)+`,"add_special_tokens":false}`).Body)
	if want := int(tok["count"].(float64)) + 1; r.CompletionTokens != want {
		t.Fatalf("completion_tokens %d, want %d (tokens of %s + EOS)", r.CompletionTokens, want, args)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// tool_choice "auto" calls with the seeded --tool-call-probability.
func TestToolCalls_AutoProbability(t *testing.T) {
	for _, tt := range []struct {
		probability float64
		lo, hi      int // calls out of 40 seeds
	}{{0, 0, 0}, {1, 40, 40}, {0.5, 10, 30}} {
		env := toolEnv(t, map[string]any{"tool_call_probability": tt.probability})
		calls := 0
		for seed := range 40 {
			body := chatBody(fmt.Sprintf(`,"seed":%d`, seed))
			r := nonStreamResult(t, env.post("/v1/chat/completions", body).Body)
			again := nonStreamResult(t, env.post("/v1/chat/completions", body).Body)
			if r.String() != again.String() {
				t.Fatalf("seed %d not deterministic", seed)
			}
			if len(r.Calls) > 0 {
				calls++
				continue
			}
			if r.Content == nil || r.Finish == "tool_calls" {
				t.Fatalf("text answer: content %v finish %q", r.Content, r.Finish)
			}
		}
		if calls < tt.lo || calls > tt.hi {
			t.Errorf("probability %v: %d calls in 40", tt.probability, calls)
		}
	}
}

// max_tokens too small for the call: finish "length"; a named call keeps
// its truncated arguments (a prefix), other modes return the raw text as
// content, as vLLM does when the parser cannot parse it.
func TestToolCalls_MaxTokensTruncates(t *testing.T) {
	env := toolEnv(t, nil)
	named := `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"seed":9`
	full := nonStreamResult(t, env.post("/v1/chat/completions", chatBody(named)).Body).Calls[0].Arguments
	for _, stream := range []bool{false, true} {
		body := chatBody(named + fmt.Sprintf(`,"max_tokens":4,"stream":%v`, stream))
		r := env.post("/v1/chat/completions", body)
		var got chatResult
		if stream {
			got = streamResult(t, r.Body)
		} else {
			got = nonStreamResult(t, r.Body)
		}
		if got.Finish != "length" || len(got.Calls) != 1 || !strings.HasPrefix(full, got.Calls[0].Arguments) || got.Calls[0].Arguments == full {
			t.Fatalf("stream %v: %+v (full %s)", stream, got, full)
		}
	}
	got := nonStreamResult(t, env.post("/v1/chat/completions", chatBody(`,"tool_choice":"required","seed":9,"max_tokens":6`)).Body)
	if got.Finish != "length" || len(got.Calls) != 0 || got.Content == nil || *got.Content == "" ||
		!strings.HasPrefix(*got.Content, `[{"name": "`) && !strings.HasPrefix(`[{"name": "`, *got.Content) {
		t.Fatalf("required truncated: %+v", got)
	}
}

// Bad tool and structured-output input is a 400 in OpenAI's error shape,
// and the server keeps serving.
func TestToolCalls_BadInputIs400(t *testing.T) {
	env := startServer(t, nil) // no --enable-auto-tool-choice
	tests := []struct {
		name, body, want string
	}{
		{"named tool not in tools", chatBody(`,"tool_choice":{"type":"function","function":{"name":"nope"}}`),
			"The tool specified in `tool_choice` does not match any of the specified `tools`"},
		{"required without tools", helloChat + `,"tool_choice":"required"}`, "When using `tool_choice`, `tools` must be set."},
		{"required with empty tools", helloChat + `,"tools":[],"tool_choice":"required"}`, "When using `tool_choice`, `tools` must be set."},
		{"auto without the server flags", chatBody(`,"tool_choice":"auto"`), `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`},
		{"tools default to auto", chatBody(``), `"auto" tool choice requires --enable-auto-tool-choice`},
		{"unknown tool_choice", chatBody(`,"tool_choice":"sometimes"`), "Invalid value for `tool_choice`: sometimes!"},
		{"named choice without a name", chatBody(`,"tool_choice":{"type":"function","function":{}}`), "Expected field `name` in `function` in `tool_choice`!"},
		{"invalid parameters schema", helloChat + `,"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"strnig"}}}],"tool_choice":"required"}`, "invalid JSON schema: at #/type: unknown type"},
		{"tool without function", helloChat + `,"tools":[{"type":"function"}],"tool_choice":"required"}`, "Field required: tools[0].function"},
		{"invalid response_format schema", helloChat + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","required":"a"}}}}`, "required must be an array of strings"},
		{"json_schema without schema", helloChat + `,"response_format":{"type":"json_schema","json_schema":{"name":"x"}}}`, "Field required: response_format.json_schema.schema"},
		{"two guided constraints", helloChat + `,"guided_regex":"a+","guided_choice":["a"]}`, "You can only use one kind of guided decoding"},
		{"two structured constraints", helloChat + `,"structured_outputs":{"regex":"a+","choice":["a"]}}`, "You can only use one kind of structured outputs constraint"},
		{"unsupported regex", helloChat + `,"guided_regex":"(?=a)b"}`, "not supported"},
		{"grammar", helloChat + `,"structured_outputs":{"grammar":"root ::= \"a\""}}`, "structured_outputs.grammar is not supported"},
		{"tool call arguments not JSON", `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":"{bad"}}]}],"max_tokens":1}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := env.post("/v1/chat/completions", tt.body)
			if tt.want == "" { // the built-in template renders arguments as text: accepted
				if r.Status != 200 {
					t.Fatalf("status %d: %s", r.Status, r.Body)
				}
				return
			}
			msg, typ, _, code := errorOf(t, r)
			if r.Status != 400 || code != 400 || !strings.Contains(msg, tt.want) || !strings.HasPrefix(typ, "BadRequest") && typ != "Bad Request" {
				t.Fatalf("status %d type %q message %q, want 400 with %q", r.Status, typ, msg, tt.want)
			}
		})
	}
	if r := env.post("/v1/chat/completions", helloChat+`,"max_tokens":2}`); r.Status != 200 {
		t.Fatalf("server stopped serving: %d %s", r.Status, r.Body)
	}
}

// Assistant tool_calls and tool messages in the input are rendered into
// the prompt: with the built-in template as Hermes blocks, and a real
// template sees the arguments as an object (vLLM parses them for it).
func TestToolCalls_InputMessagesRendered(t *testing.T) {
	history := func(calls string) string {
		return `{"messages":[{"role":"user","content":"Weather?"},` +
			`{"role":"assistant","content":null` + calls + `},` +
			`{"role":"tool","tool_call_id":"call_1","content":"{\"temp\": 21}"}],"max_tokens":1}`
	}
	withCall := `,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]`
	env := startServer(t, nil)
	with := jsonOf(t, env.post("/v1/chat/completions", history(withCall)).Body)
	without := jsonOf(t, env.post("/v1/chat/completions", history("")).Body)
	p1 := with["usage"].(map[string]any)["prompt_tokens"].(float64)
	p0 := without["usage"].(map[string]any)["prompt_tokens"].(float64)
	rendered := `<tool_call>` + "\n" + `{"name": "get_weather", "arguments": {"city": "Paris"}}` + "\n" + `</tool_call>`
	tok := jsonOf(t, env.post("/tokenize", `{"prompt":`+strconvQuote(rendered)+`,"add_special_tokens":false}`).Body)
	if p1-p0 != tok["count"].(float64) {
		t.Fatalf("prompt tokens %v with the call, %v without; the call block is %v tokens", p1, p0, tok["count"])
	}

	// A real template reads the arguments as a mapping.
	tmpl := `{% for m in messages %}{% if m.tool_calls %}{{ raise_exception('city=' ~ m.tool_calls[0].function.arguments.city) }}{% endif %}{{ m.content }}{% endfor %}`
	parsed, err := chattemplate.Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	real := startServer(t, nil, settings.Deps{ChatTemplate: chattemplate.NewRenderer(parsed, "", "")})
	msg, _, _, _ := errorOf(t, real.post("/v1/chat/completions", history(withCall)))
	if msg != "city=Paris" {
		t.Fatalf("template saw %q", msg)
	}
}

// Call ids follow vLLM's format, repeat for a repeated request, and differ
// between turns of a conversation sent with the same seed (an agent keeps
// ids of earlier calls in its history).
func TestToolCalls_IDsDifferAcrossTurns(t *testing.T) {
	env := toolEnv(t, nil)
	named := `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"seed":1`
	first := nonStreamResult(t, env.post("/v1/chat/completions", chatBody(named)).Body).Calls[0]
	again := nonStreamResult(t, env.post("/v1/chat/completions", chatBody(named)).Body).Calls[0]
	next := `{"messages":[{"role":"user","content":"Plan my week"},{"role":"assistant","content":null,"tool_calls":[` +
		`{"id":"` + first.ID + `","type":"function","function":{"name":"get_weather","arguments":` + strconvQuote(first.Arguments) + `}}]},` +
		`{"role":"tool","tool_call_id":"` + first.ID + `","content":"sunny"}],"tools":` + weatherTools + named + `}`
	second := nonStreamResult(t, env.post("/v1/chat/completions", next).Body).Calls[0]
	if first.ID != again.ID || first.Arguments != again.Arguments {
		t.Fatalf("repeated request: %+v vs %+v", first, again)
	}
	if second.ID == first.ID {
		t.Fatalf("the next turn reuses call id %s", first.ID)
	}
}

// tool_choice "none" keeps the tools in the prompt, unless
// --exclude-tools-when-tool-choice-none (vLLM's flag) leaves them out.
func TestToolCalls_ExcludeToolsWhenToolChoiceNone(t *testing.T) {
	promptTokens := func(env *testEnv, choice string) float64 {
		r := env.post("/v1/chat/completions", chatBody(`,"tool_choice":"`+choice+`","max_tokens":1`))
		return jsonOf(t, r.Body)["usage"].(map[string]any)["prompt_tokens"].(float64)
	}
	bare := jsonOf(t, startServer(t, nil).post("/v1/chat/completions",
		`{"messages":[{"role":"user","content":"Plan my week"}],"max_tokens":1}`).Body)["usage"].(map[string]any)["prompt_tokens"].(float64)
	keep := startServer(t, nil)
	if got := promptTokens(keep, "none"); got <= bare {
		t.Fatalf("tools not rendered with tool_choice none: %v prompt tokens, %v without tools", got, bare)
	}
	exclude := startServer(t, map[string]any{"exclude_tools_when_tool_choice_none": true})
	if got := promptTokens(exclude, "none"); got != bare {
		t.Fatalf("with the flag, tool_choice none prompt has %v tokens, want %v", got, bare)
	}
	if got := promptTokens(exclude, "required"); got <= bare {
		t.Fatalf("with the flag, tool_choice required lost its tools: %v", got)
	}
}
