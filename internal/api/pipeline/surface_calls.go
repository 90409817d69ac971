package pipeline

import (
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
)

// callStep is what one position of a tool-call plan contributes to a
// Responses or Anthropic stream, which show calls as output items or
// content blocks rather than chat deltas.
type callStep struct {
	Open bool   // the call's name is known from here on: start its item or block
	Call int    // the call the position belongs to (-1: none)
	Args string // an arguments fragment ("" = none)
}

// CallStepAt reads position pos of a choice with planned calls; opened is
// how many calls the stream has started so far. A call starts with the
// last token of its header (when its name is complete), or with its first
// arguments token when there is no header (a named tool_choice).
func CallStepAt(ch *Choice, pos, opened int) callStep {
	part := ch.Plan.Part(pos)
	if part < 0 {
		return callStep{Call: -1}
	}
	role := ch.Calls.Roles[part]
	step := callStep{Call: role.Call}
	switch role.Kind {
	case toolcall.PartHeader:
		last := pos+1 >= len(ch.Plan.IDs) || ch.Plan.Part(pos+1) != part
		step.Open = last && role.Call >= opened
	case toolcall.PartArguments:
		step.Open = role.Call >= opened
		step.Args, _ = ch.Plan.Segment(pos)
	}
	return step
}

// FunctionItemID is the id of a Responses function_call item.
func FunctionItemID(g *GenRequest, call int) string {
	return "fc_" + g.BaseID + "_" + wire.Itoa(call)
}

// ForEachToken records a run of output items (job.record) and calls token
// for every delivered planned token of a one-choice job; terminal items and
// tokens beyond the plan (never produced by the engine) are only recorded.
func (j *Job) ForEachToken(items []engine.OutputItem, token func(ch *Choice, pos int)) {
	for i := range items {
		it := &items[i]
		ch := j.Record(it)
		if it.Final {
			continue
		}
		if pos := ch.N - 1; pos < len(ch.Plan.IDs) {
			token(ch, pos)
		}
	}
}
