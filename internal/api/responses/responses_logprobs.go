package responses

import (
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/logprob"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
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
func appendResponsesLogprob(l *logprob.Renderer, b []byte, id uint32, withBytes bool) []byte {
	text := l.Tok.TokenText(id)
	b = append(b, `{"token":`...)
	b = l.AppendToken(b, id, text)
	if withBytes {
		b = append(b, `,"bytes":`...)
		b = l.AppendTokenBytes(b, id, text)
	}
	b = append(b, `,"logprob":`...)
	b = wire.AppendFloat(b, tokenizer.Logprob(id))
	b = append(b, `,"top_logprobs":[`...)
	l.Cands = tokenizer.TopCandidates(l.Tok, id, l.K, l.Cands)
	for i := range l.Cands {
		c := &l.Cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = l.AppendToken(b, c.ID, c.Text)
		if withBytes {
			b = append(b, `,"bytes":`...)
			b = l.AppendTokenBytes(b, c.ID, c.Text)
		}
		b = append(b, `,"logprob":`...)
		b = wire.AppendFloat(b, c.Logprob)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// contentTokens returns the delivered token ids of a choice's message text:
// every position after the reasoning framing.
func contentTokens(ch *pipeline.Choice) []uint32 {
	n := min(ch.N, len(ch.Plan.IDs))
	return ch.Plan.IDs[min(ch.Plan.ThinkLen, n):n]
}

// appendResponsesLogprobs appends the list of ids' entries ("null" when
// the request did not ask for logprobs).
func appendResponsesLogprobs(j *pipeline.Job, b []byte, ids []uint32, withBytes bool) []byte {
	if !j.G.Logprobs {
		return append(b, "null"...)
	}
	lp := pipeline.NewLogprobRenderer(j)
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendResponsesLogprob(lp, b, id, withBytes)
	}
	return append(b, ']')
}

// appendTopLogprobs appends the response object's top_logprobs: the k of a
// request with logprobs, null otherwise (vLLM echoes its sampling
// parameter).
func appendTopLogprobs(j *pipeline.Job, b []byte) []byte {
	if !j.G.Logprobs {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, int64(j.G.TopLogprobs), 10)
}
