package toolcall

import (
	"math"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Conversation is what the tool_choice "auto" decision reads of a
// request's messages. Every surface gives its conversation as chat
// messages, so the same rule holds for a chat tool message, a Responses
// function_call_output item and an Anthropic tool_result block (each
// becomes a "tool" message).
type Conversation struct {
	// AfterResult: the last message is a tool result, so the answer is the
	// model's turn after it ran a tool.
	AfterResult bool
	// Rounds counts the assistant turns that called tools since the last
	// user message (a turn with several parallel calls is one round).
	Rounds int
}

// ReadConversation reads where msgs stand in an agent loop. A user message
// (one with text; an Anthropic user turn holding only tool_result blocks
// becomes tool messages alone) starts a new exchange, so tool rounds before
// it do not count.
func ReadConversation(msgs []tokenizer.Message) Conversation {
	var c Conversation
	if len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" {
		c.AfterResult = true
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role == "user" {
			break
		}
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			c.Rounds++
		}
	}
	return c
}

// AutoPolicy is how a tool_choice "auto" answer decides between calling
// tools and answering in text.
type AutoPolicy struct {
	// Probability applies to a turn that does not follow a tool result
	// (--tool-call-probability).
	Probability float64
	// AfterResult applies to the turn after a tool result; after k
	// consecutive tool rounds an answer calls again with AfterResult^k, so
	// a loop that has called tools several times in a row is ever more
	// likely to answer (--tool-call-after-result-probability).
	AfterResult float64
}

// CallProbability is the chance that an "auto" answer in conversation c
// calls tools.
func (p AutoPolicy) CallProbability(c Conversation) float64 {
	if !c.AfterResult {
		return p.Probability
	}
	// A tool result without an assistant call before it (a client that
	// sends results alone) counts as the first round.
	return math.Pow(p.AfterResult, float64(max(c.Rounds, 1)))
}
