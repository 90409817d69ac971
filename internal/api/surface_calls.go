package api

import (
	"encoding/json"
	"strings"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// callStep is what one position of a tool-call plan contributes to a
// Responses or Anthropic stream, which show calls as output items or
// content blocks rather than chat deltas.
type callStep struct {
	open bool   // the call's name is known from here on: start its item or block
	call int    // the call the position belongs to (-1: none)
	args string // an arguments fragment ("" = none)
}

// callStepAt reads position pos of a choice with planned calls; opened is
// how many calls the stream has started so far. A call starts with the
// last token of its header (when its name is complete), or with its first
// arguments token when there is no header (a named tool_choice).
func callStepAt(ch *choice, pos, opened int) callStep {
	part := ch.plan.Part(pos)
	if part < 0 {
		return callStep{call: -1}
	}
	role := ch.calls.roles[part]
	step := callStep{call: role.call}
	switch role.kind {
	case partHeader:
		last := pos+1 >= len(ch.plan.IDs) || ch.plan.Part(pos+1) != part
		step.open = last && role.call >= opened
	case partArguments:
		step.open = role.call >= opened
		step.args, _ = ch.plan.Segment(pos)
	}
	return step
}

// responsesCallID is a Responses function call's call_id: vLLM writes
// call_<uuid>; the mock reuses the digits of the planned chat id.
func responsesCallID(c plannedCall) string {
	return "call_" + strings.TrimPrefix(c.id, "chatcmpl-tool-")
}

// functionItemID is the id of a Responses function_call item.
func functionItemID(g *genRequest, call int) string {
	return "fc_" + g.baseID + "_" + itoa(call)
}

// chatTool is a function tool in its chat completions form, what the
// Responses and Anthropic tools translate to.
type chatTool struct {
	Type     string          `json:"type"`
	Function chatToolFuncDef `json:"function"`
}

type chatToolFuncDef struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// namedChoiceJSON is the chat form of a tool_choice naming one function.
func namedChoiceJSON(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": name}})
	return b
}

// forEachToken records a run of output items (job.record) and calls token
// for every delivered planned token of a one-choice job; terminal items and
// tokens beyond the plan (never produced by the engine) are only recorded.
func (j *job) forEachToken(items []engine.OutputItem, token func(ch *choice, pos int)) {
	for i := range items {
		it := &items[i]
		ch := j.record(it)
		if it.Final {
			continue
		}
		if pos := ch.n - 1; pos < len(ch.plan.IDs) {
			token(ch, pos)
		}
	}
}
