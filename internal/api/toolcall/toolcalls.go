package toolcall

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

// PlannedCall is one tool call a choice makes.
type PlannedCall struct {
	ID   string
	Name string
}

// ChoiceCalls is the tool-call side of a choice whose output is a call:
// which calls, and the role of every part of its plan (plan.Text parts).
type ChoiceCalls struct {
	style toolChoiceKind // toolChoiceNamed, toolChoiceRequired or toolChoiceAuto
	Calls []PlannedCall
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

// wantsCall draws the seeded tool_choice "auto" decision. The draw mixes
// the choice's seed with a hash of the conversation (its prompt), so a
// fixed request seed still decides afresh on each turn of an agent loop,
// and the same conversation always decides the same way.
func wantsCall(seed, conversation uint64, probability float64) bool {
	r := float64(subSeed(seed^conversation, saltDecide)>>11) / (1 << 53)
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
func planCalls(spec *ToolSpec, parser string, seed, idSalt uint64) ([]string, *ChoiceCalls) {
	cc := &ChoiceCalls{style: spec.choice}
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
		cc.Calls = append(cc.Calls, PlannedCall{ID: toolCallID(callSeed ^ idSalt), Name: def.name})
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
	ToolCalls []ToolCallJSON // nil: the text did not form calls
	Content   *string        // nil = null
	Finish    engine.FinishReason
}

// Result turns the delivered part of a call plan into the message vLLM
// would send: complete calls as tool_calls, with content "" (named,
// required) or null (auto, as the parsers return it) and finish_reason
// "tool_calls" except for a named choice ("stop", like OpenAI). A plan cut
// short (max_tokens, a stop string) keeps a named call with its truncated
// arguments, and otherwise returns the raw text as content, as vLLM's
// parsers do when the text does not parse.
func (cc *ChoiceCalls) Result(p *plan.Result, n int, reason engine.FinishReason) callResult {
	delivered := min(n, len(p.IDs))
	complete := cc.complete(p, n, reason)
	args := make([]strings.Builder, len(cc.Calls))
	var whole strings.Builder
	for pos := range delivered {
		text, _ := p.Segment(pos)
		whole.WriteString(text)
		if role := cc.roles[p.Part(pos)]; role.kind == partArguments {
			args[role.call].WriteString(text)
		}
	}
	raw := whole.String()
	empty := ""
	if !complete && cc.style != toolChoiceNamed {
		return callResult{Content: &raw, Finish: reason}
	}
	out := callResult{Finish: cc.Finish(p, n, reason)}
	for k, call := range cc.Calls {
		out.ToolCalls = append(out.ToolCalls, ToolCallJSON{ID: call.ID, Name: call.Name, Arguments: args[k].String()})
	}
	if cc.style != toolChoiceAuto {
		out.Content = &empty
	}
	return out
}

// complete reports whether the whole planned text of the calls was
// delivered and ended naturally.
func (cc *ChoiceCalls) complete(p *plan.Result, n int, reason engine.FinishReason) bool {
	return reason == engine.FinishStop && p.NaturalEnd && n >= len(p.IDs)
}

// Finish is the choice's finish_reason: "tool_calls" for complete auto and
// required calls, the engine's reason otherwise (a named call ends with
// "stop", as OpenAI and vLLM answer it).
func (cc *ChoiceCalls) Finish(p *plan.Result, n int, reason engine.FinishReason) engine.FinishReason {
	if cc.style != toolChoiceNamed && cc.complete(p, n, reason) {
		return FinishToolCalls
	}
	return reason
}

// FinishToolCalls is the finish_reason of an answer that calls tools.
const FinishToolCalls engine.FinishReason = "tool_calls"

// ToolCallJSON is one entry of message.tool_calls.
type ToolCallJSON struct {
	ID        string
	Name      string
	Arguments string
}

func AppendToolCalls(b []byte, calls []ToolCallJSON) []byte {
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

// AppendCallDelta appends the delta object of position pos of a call
// plan, or returns ok false when the position sends nothing (framing text,
// empty fragments). The sequence is vLLM's: a first delta per call with
// its id, type, index and function name (and, for a named choice, the
// first arguments fragment; for required, arguments ""; the auto parsers
// send the name alone), then one {"index","function":{"arguments"}} delta
// per token of the arguments.
func (cc *ChoiceCalls) AppendCallDelta(b []byte, p *plan.Result, pos int) ([]byte, bool) {
	part := p.Part(pos)
	if part < 0 {
		return b, false
	}
	role := cc.roles[part]
	text, _ := p.Segment(pos)
	call := cc.Calls[role.call]
	switch {
	case role.kind == partHeader:
		// The name is known once the header's last token is out.
		if pos+1 >= len(p.IDs) || p.Part(pos+1) == part {
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
func appendCallHeader(b []byte, index int, call PlannedCall, style toolChoiceKind) []byte {
	b = append(b, `{"tool_calls":[{"id":`...)
	b = jsonenc.AppendString(b, call.ID)
	b = append(b, `,"type":"function","index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"function":{"name":`...)
	b = jsonenc.AppendString(b, call.Name)
	if style == toolChoiceRequired {
		b = append(b, `,"arguments":""`...)
	}
	if style != toolChoiceNamed {
		b = append(b, '}')
	}
	return b
}

// PlanChoice plans one choice: tool calls (always for a named or required
// tool_choice, for auto by a seeded draw with the policy's probability for
// the conversation), else the structured output, else free text.
func PlanChoice(tools *ToolSpec, structured *StructuredSpec, p plan.Params, prompt []uint32, auto AutoPolicy, parser string) (plan.Result, *ChoiceCalls) {
	seed := choiceSeed(p.Seed, p.Choice)
	if tools != nil {
		conversation := plan.RequestSeed(nil, 0, prompt)
		if tools.choice != toolChoiceAuto || wantsCall(seed, conversation, auto.CallProbability(tools.conv)) {
			parts, calls := planCalls(tools, parser, seed, conversation)
			return plan.Text(p, parts), calls
		}
	}
	if structured != nil {
		return plan.Text(p, []string{structured.text(subSeed(seed, saltStructured))}), nil
	}
	return plan.Plan(p), nil
}

// CallStep is what one position of a tool-call plan contributes to a
// Responses or Anthropic stream, which show calls as output items or
// content blocks rather than chat deltas.
type CallStep struct {
	Open bool   // the call's name is known from here on: start its item or block
	Call int    // the call the position belongs to (-1: none)
	Args string // an arguments fragment ("" = none)
}

// StepAt reads position pos of the choice's plan p; opened is how many
// calls the stream has started so far. A call starts with the last token of
// its header (when its name is complete), or with its first arguments token
// when there is no header (a named tool_choice).
func (cc *ChoiceCalls) StepAt(p *plan.Result, pos, opened int) CallStep {
	part := p.Part(pos)
	if part < 0 {
		return CallStep{Call: -1}
	}
	role := cc.roles[part]
	step := CallStep{Call: role.call}
	switch role.kind {
	case partHeader:
		last := pos+1 >= len(p.IDs) || p.Part(pos+1) != part
		step.Open = last && role.call >= opened
	case partArguments:
		step.Open = role.call >= opened
		step.Args, _ = p.Segment(pos)
	}
	return step
}
