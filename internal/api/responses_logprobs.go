package api

import (
	"strconv"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Responses logprobs (include: ["message.output_text.logprobs"]): the
// same synthetic values as chat's, in the Responses shapes. A message's
// output_text part lists every content token as openai-python's Logprob
// (token, bytes, logprob, top_logprobs with bytes); a streamed delta and
// the text's done event use the event form (token, logprob, top_logprobs
// without bytes).

// appendResponsesLogprob appends one token's entry; withBytes selects the
// output_text form.
func (l *logprobRenderer) appendResponsesLogprob(b []byte, id uint32, withBytes bool) []byte {
	text := l.tok.TokenText(id)
	b = append(b, `{"token":`...)
	b = l.appendToken(b, id, text)
	if withBytes {
		b = append(b, `,"bytes":`...)
		b = l.appendTokenBytes(b, id, text)
	}
	b = append(b, `,"logprob":`...)
	b = appendFloat(b, tokenizer.Logprob(id))
	b = append(b, `,"top_logprobs":[`...)
	l.cands = tokenizer.TopCandidates(l.tok, id, l.k, l.cands)
	for i := range l.cands {
		c := &l.cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = l.appendToken(b, c.ID, c.Text)
		if withBytes {
			b = append(b, `,"bytes":`...)
			b = l.appendTokenBytes(b, c.ID, c.Text)
		}
		b = append(b, `,"logprob":`...)
		b = appendFloat(b, c.Logprob)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// contentTokens returns the delivered token ids of a choice's message text:
// every position after the reasoning framing.
func (ch *choice) contentTokens() []uint32 {
	n := min(ch.n, len(ch.plan.IDs))
	return ch.plan.IDs[min(ch.plan.ThinkLen, n):n]
}

// appendResponsesLogprobs appends the list of ids' entries ("null" when
// the request did not ask for logprobs).
func (j *job) appendResponsesLogprobs(b []byte, ids []uint32, withBytes bool) []byte {
	if !j.g.logprobs {
		return append(b, "null"...)
	}
	lp := j.logprobRenderer()
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = lp.appendResponsesLogprob(b, id, withBytes)
	}
	return append(b, ']')
}

// appendTopLogprobs appends the response object's top_logprobs: the k of a
// request with logprobs, null otherwise (vLLM echoes its sampling
// parameter).
func (j *job) appendTopLogprobs(b []byte) []byte {
	if !j.g.logprobs {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(j.g.topLogprobs), 10)
}
