package api

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/schemagen"
)

// partKind says what a part of a tool-call output's text is.
type partKind uint8

const (
	partHeader    partKind = iota // the text before a call's arguments: its name and framing
	partArguments                 // the arguments JSON
	partTrailer                   // what closes a call (and opens the next)
)

// partRole is the kind of one plan part and the call it belongs to.
type partRole struct {
	kind partKind
	call int
}

// plannedCall is one tool call a choice makes.
type plannedCall struct {
	id   string
	name string
}

// choiceCalls is the tool-call side of a choice whose output is a call:
// which calls, and the role of every part of its plan (plan.Text parts).
type choiceCalls struct {
	style toolChoiceKind // toolChoiceNamed, toolChoiceRequired or toolChoiceAuto
	calls []plannedCall
	roles []partRole
}

// callFormat is how a model writes tool calls as text: the mock's output
// text (and so its token count) follows the format of the configured
// parser's model family.
type callFormat struct {
	open      string // before the first call
	nameStart string // a call's text up to its name
	nameEnd   string // from its name to its arguments
	callEnd   string // after its arguments
	between   string // between two calls
	close     string // after the last call
}

var (
	// hermesFormat: Hermes / Qwen <tool_call> blocks; also the fallback of
	// parsers whose own format the mock does not write.
	hermesFormat = callFormat{nameStart: "<tool_call>\n{\"name\": \"", nameEnd: "\", \"arguments\": ",
		callEnd: "}\n</tool_call>", between: "\n"}
	llamaJSONFormat = callFormat{nameStart: "{\"name\": \"", nameEnd: "\", \"parameters\": ", callEnd: "}", between: "; "}
	mistralFormat   = callFormat{open: "[TOOL_CALLS][", nameStart: "{\"name\": \"", nameEnd: "\", \"arguments\": ",
		callEnd: "}", between: ", ", close: "]"}
	// requiredFormat is the JSON array vLLM's guided decoding makes a model
	// write for tool_choice "required", whatever the parser.
	requiredFormat = callFormat{open: "[", nameStart: "{\"name\": \"", nameEnd: "\", \"parameters\": ",
		callEnd: "}", between: ", ", close: "]"}
)

// formatFor returns the call format of a --tool-call-parser.
func formatFor(parser string) callFormat {
	switch parser {
	case "llama3_json", "llama4_json":
		return llamaJSONFormat
	case "mistral":
		return mistralFormat
	}
	return hermesFormat
}

// Seeds of a choice's decisions, all derived from its output seed.
func choiceSeed(requestSeed uint64, choice int) uint64 {
	return plan.Mix64(requestSeed + uint64(choice+1)*plan.Phi)
}

func subSeed(seed uint64, salt uint64) uint64 { return plan.Mix64(seed ^ salt*plan.Phi) }

const (
	saltDecide     = iota + 1 // auto: call or text
	saltCount                 // how many parallel calls
	saltOrder                 // which functions
	saltStructured            // the structured output
	saltCallBase   = 1 << 16  // + k: call k's arguments and id
)

// wantsCall draws the seeded tool_choice "auto" decision.
func wantsCall(seed uint64, probability float64) bool {
	r := float64(subSeed(seed, saltDecide)>>11) / (1 << 53)
	return r < probability
}

// planCalls chooses the calls of one choice and returns the parts of their
// text. Named: one call, and the text is just its arguments (vLLM guides
// the model to the arguments alone). Required and auto: one call, or with
// parallel_tool_calls and several tools sometimes two or three, framed in
// the required array or the parser's format.
//
// idSalt goes into the call ids only: a hash of the prompt, so that turns
// of one conversation sent with the same "seed" still get distinct ids.
func planCalls(spec *toolSpec, parser string, seed, idSalt uint64) ([]string, *choiceCalls) {
	cc := &choiceCalls{style: spec.choice}
	var picks []int
	switch {
	case spec.choice == toolChoiceNamed:
		picks = []int{spec.named}
	default:
		count := 1
		if spec.parallel && len(spec.tools) > 1 {
			switch r := subSeed(seed, saltCount) % 100; {
			case r < 10:
				count = 3
			case r < 30:
				count = 2
			}
			count = min(count, len(spec.tools))
		}
		order := permutation(len(spec.tools), subSeed(seed, saltOrder))
		picks = order[:count]
	}
	format := formatFor(parser)
	if spec.choice == toolChoiceRequired {
		format = requiredFormat
	}
	var parts []string
	for k, tool := range picks {
		callSeed := subSeed(seed, saltCallBase+uint64(k))
		def := spec.tools[tool]
		cc.calls = append(cc.calls, plannedCall{id: toolCallID(callSeed ^ idSalt), name: def.name})
		args := string(schemagen.Spaced(def.params.Generate(callSeed)))
		if spec.choice == toolChoiceNamed {
			parts = append(parts, args)
			cc.roles = append(cc.roles, partRole{kind: partArguments, call: k})
			continue
		}
		header := format.nameStart + def.name + format.nameEnd
		if k == 0 {
			header = format.open + header
		}
		trailer := format.callEnd + format.between
		if k == len(picks)-1 {
			trailer = format.callEnd + format.close
		}
		parts = append(parts, header, args, trailer)
		cc.roles = append(cc.roles, partRole{partHeader, k}, partRole{partArguments, k}, partRole{partTrailer, k})
	}
	return parts, cc
}

// toolCallID is vLLM's id format, chatcmpl-tool-<32 hex digits>; the mock
// derives the digits from the seed so that outputs stay reproducible.
func toolCallID(seed uint64) string {
	return fmt.Sprintf("chatcmpl-tool-%016x%016x", plan.Mix64(seed^0x1d), plan.Mix64(seed^0x2e))
}

// permutation is a seeded shuffle of 0..n-1.
func permutation(n int, seed uint64) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	for i := n - 1; i > 0; i-- {
		seed = plan.Mix64(seed + plan.Phi)
		j := int(seed % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	return order
}

// callResult is what a finished choice with planned calls answers.
type callResult struct {
	toolCalls []toolCallJSON // nil: the text did not form calls
	content   *string        // nil = null
	finish    engine.FinishReason
}

// result turns the delivered part of a call plan into the message vLLM
// would send: complete calls as tool_calls, with content "" (named,
// required) or null (auto, as the parsers return it) and finish_reason
// "tool_calls" except for a named choice ("stop", like OpenAI). A plan cut
// short (max_tokens, a stop string) keeps a named call with its truncated
// arguments, and otherwise returns the raw text as content, as vLLM's
// parsers do when the text does not parse.
func (cc *choiceCalls) result(ch *choice) callResult {
	reason, _ := ch.reasons()
	delivered := min(ch.n, len(ch.plan.IDs))
	complete := cc.complete(ch)
	args := make([]strings.Builder, len(cc.calls))
	var whole strings.Builder
	for pos := range delivered {
		text, _ := ch.plan.Segment(pos)
		whole.WriteString(text)
		if role := cc.roles[ch.plan.Part(pos)]; role.kind == partArguments {
			args[role.call].WriteString(text)
		}
	}
	raw := whole.String()
	empty := ""
	if !complete && cc.style != toolChoiceNamed {
		return callResult{content: &raw, finish: reason}
	}
	out := callResult{finish: cc.finish(ch)}
	for k, call := range cc.calls {
		out.toolCalls = append(out.toolCalls, toolCallJSON{ID: call.id, Name: call.name, Arguments: args[k].String()})
	}
	if cc.style != toolChoiceAuto {
		out.content = &empty
	}
	return out
}

// complete reports whether the whole planned text of the calls was
// delivered and ended naturally.
func (cc *choiceCalls) complete(ch *choice) bool {
	reason, _ := ch.reasons()
	return reason == engine.FinishStop && ch.plan.NaturalEnd && ch.n >= len(ch.plan.IDs)
}

// finish is the choice's finish_reason: "tool_calls" for complete auto and
// required calls, the engine's reason otherwise (a named call ends with
// "stop", as OpenAI and vLLM answer it).
func (cc *choiceCalls) finish(ch *choice) engine.FinishReason {
	if cc.style != toolChoiceNamed && cc.complete(ch) {
		return finishToolCalls
	}
	reason, _ := ch.reasons()
	return reason
}

// finishToolCalls is the finish_reason of an answer that calls tools.
const finishToolCalls engine.FinishReason = "tool_calls"

// toolCallJSON is one entry of message.tool_calls.
type toolCallJSON struct {
	ID        string
	Name      string
	Arguments string
}

func appendToolCalls(b []byte, calls []toolCallJSON) []byte {
	b = append(b, '[')
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonenc.AppendString(b, c.ID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = jsonenc.AppendString(b, c.Name)
		b = append(b, `,"arguments":`...)
		b = jsonenc.AppendString(b, c.Arguments)
		b = append(b, "}}"...)
	}
	return append(b, ']')
}

// appendCallDelta appends the delta object of position pos of a call
// plan, or returns ok false when the position sends nothing (framing text,
// empty fragments). The sequence is vLLM's: a first delta per call with
// its id, type, index and function name (and, for a named choice, the
// first arguments fragment; for required, arguments ""; the auto parsers
// send the name alone), then one {"index","function":{"arguments"}} delta
// per token of the arguments.
func (cc *choiceCalls) appendCallDelta(b []byte, ch *choice, pos int) ([]byte, bool) {
	part := ch.plan.Part(pos)
	if part < 0 {
		return b, false
	}
	role := cc.roles[part]
	text, _ := ch.plan.Segment(pos)
	call := cc.calls[role.call]
	switch {
	case role.kind == partHeader:
		// The name is known once the header's last token is out.
		if pos+1 >= len(ch.plan.IDs) || ch.plan.Part(pos+1) == part {
			return b, false
		}
		b = appendCallHeader(b, role.call, call, cc.style)
		b = append(b, "}]}"...)
		return b, true
	case role.kind == partArguments && cc.style == toolChoiceNamed && pos == 0:
		b = appendCallHeader(b, role.call, call, cc.style)
		b = append(b, `,"arguments":`...)
		b = jsonenc.AppendString(b, text)
		b = append(b, "}}]}"...)
		return b, true
	case role.kind == partArguments && text != "":
		b = append(b, `{"tool_calls":[{"index":`...)
		b = strconv.AppendInt(b, int64(role.call), 10)
		b = append(b, `,"function":{"arguments":`...)
		b = jsonenc.AppendString(b, text)
		b = append(b, "}}]}"...)
		return b, true
	}
	return b, false
}

// appendCallHeader appends `{"tool_calls":[{"id":…,"type":"function",
// "index":k,"function":{"name":…` (open), plus `,"arguments":""` for
// required.
func appendCallHeader(b []byte, index int, call plannedCall, style toolChoiceKind) []byte {
	b = append(b, `{"tool_calls":[{"id":`...)
	b = jsonenc.AppendString(b, call.id)
	b = append(b, `,"type":"function","index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"function":{"name":`...)
	b = jsonenc.AppendString(b, call.name)
	if style == toolChoiceRequired {
		b = append(b, `,"arguments":""`...)
	}
	if style != toolChoiceNamed {
		b = append(b, '}')
	}
	return b
}

// planChoice plans one choice: tool calls (always for a named or required
// tool_choice, by the seeded --tool-call-probability draw for auto), else
// the structured output, else free text.
func (s *Server) planChoice(g *genRequest, p plan.Params, prompt []uint32) (plan.Result, *choiceCalls) {
	seed := choiceSeed(p.Seed, p.Choice)
	if g.tools != nil && (g.tools.choice != toolChoiceAuto || wantsCall(seed, s.opts.Tools.CallProbability)) {
		parts, calls := planCalls(g.tools, s.opts.Tools.Parser, seed, plan.RequestSeed(nil, 0, prompt))
		return plan.Text(p, parts), calls
	}
	if g.structured != nil {
		return plan.Text(p, []string{g.structured.text(subSeed(seed, saltStructured))}), nil
	}
	return plan.Plan(p), nil
}
