package api

import (
	"strconv"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// logprobRenderer appends the synthetic logprobs (tokenizer.Logprob,
// tokenizer.TopCandidates) as JSON.
// It reuses its candidate buffer, so rendering allocates nothing once warm.
type logprobRenderer struct {
	k     int  // chat top_logprobs / completions logprobs
	asIDs bool // return_tokens_as_token_ids
	tok   tokenizer.Model
	cands []tokenizer.Candidate
}

func (j *job) logprobRenderer() *logprobRenderer {
	return &logprobRenderer{k: j.g.topLogprobs, asIDs: j.g.tokensAsIDs, tok: j.s.tok}
}

const tokenIDPrefix = "token_id:"

// appendToken appends the token string of id as a JSON string: its literal
// text, or token_id:<id>.
func (l *logprobRenderer) appendToken(b []byte, id uint32, text string) []byte {
	if l.asIDs {
		b = append(b, '"')
		b = append(b, tokenIDPrefix...)
		b = strconv.AppendUint(b, uint64(id), 10)
		return append(b, '"')
	}
	return jsonenc.AppendString(b, text)
}

// appendTokenBytes appends the UTF-8 bytes of the token string.
func (l *logprobRenderer) appendTokenBytes(b []byte, id uint32, text string) []byte {
	if !l.asIDs {
		return appendByteValues(b, text)
	}
	var digits [10]byte
	d := strconv.AppendUint(digits[:0], uint64(id), 10)
	b = append(b, '[')
	for i := 0; i < len(tokenIDPrefix); i++ {
		b = strconv.AppendUint(b, uint64(tokenIDPrefix[i]), 10)
		b = append(b, ',')
	}
	for i, c := range d {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(c), 10)
	}
	return append(b, ']')
}

// appendChatEntry appends one chat logprobs content entry:
// {"token","logprob","bytes","top_logprobs":[k entries]}.
func (l *logprobRenderer) appendChatEntry(b []byte, id uint32) []byte {
	text := l.tok.TokenText(id)
	b = append(b, `{"token":`...)
	b = l.appendToken(b, id, text)
	b = append(b, `,"logprob":`...)
	b = appendFloat(b, tokenizer.Logprob(id))
	b = append(b, `,"bytes":`...)
	b = l.appendTokenBytes(b, id, text)
	b = append(b, `,"top_logprobs":[`...)
	l.cands = tokenizer.TopCandidates(l.tok, id, l.k, l.cands)
	for i := range l.cands {
		c := &l.cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = l.appendToken(b, c.ID, c.Text)
		b = append(b, `,"logprob":`...)
		b = appendFloat(b, c.Logprob)
		b = append(b, `,"bytes":`...)
		b = l.appendTokenBytes(b, c.ID, c.Text)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendChatList appends {"content":[one entry per id]}.
func (l *logprobRenderer) appendChatList(b []byte, ids []uint32) []byte {
	b = append(b, `{"content":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = l.appendChatEntry(b, id)
	}
	return append(b, "]}"...)
}

// appendTopMap appends one completions top_logprobs object with max(k, 1)
// entries, sampled token first.
func (l *logprobRenderer) appendTopMap(b []byte, id uint32) []byte {
	l.cands = tokenizer.TopCandidates(l.tok, id, max(l.k, 1), l.cands)
	b = append(b, '{')
	for i := range l.cands {
		c := &l.cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = l.appendToken(b, c.ID, c.Text)
		b = append(b, ':')
		b = appendFloat(b, c.Logprob)
	}
	return append(b, '}')
}

// appendCompletionOne appends the completions logprobs of one streamed token
// at text offset offset.
func (l *logprobRenderer) appendCompletionOne(b []byte, id uint32, offset int) []byte {
	b = append(b, `{"text_offset":[`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `],"token_logprobs":[`...)
	b = appendFloat(b, tokenizer.Logprob(id))
	b = append(b, `],"tokens":[`...)
	b = l.appendToken(b, id, l.tok.TokenText(id))
	b = append(b, `],"top_logprobs":[`...)
	b = l.appendTopMap(b, id)
	return append(b, "]}"...)
}

// appendCompletionLists appends the completions logprobs of a whole choice:
// text_offset counts characters from the start of the choice's text, whose
// first offset characters are the echoed prompt.
func (l *logprobRenderer) appendCompletionLists(b []byte, p *plan.Result, ids []uint32, offset int) []byte {
	b = append(b, `{"text_offset":[`...)
	for pos := range ids {
		if pos > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(offset), 10)
		text, _ := p.Segment(pos)
		offset += utf8.RuneCountInString(text)
	}
	b = append(b, `],"token_logprobs":[`...)
	for pos, id := range ids {
		if pos > 0 {
			b = append(b, ',')
		}
		b = appendFloat(b, tokenizer.Logprob(id))
	}
	b = append(b, `],"tokens":[`...)
	for pos, id := range ids {
		if pos > 0 {
			b = append(b, ',')
		}
		b = l.appendToken(b, id, l.tok.TokenText(id))
	}
	b = append(b, `],"top_logprobs":[`...)
	for pos, id := range ids {
		if pos > 0 {
			b = append(b, ',')
		}
		b = l.appendTopMap(b, id)
	}
	return append(b, "]}"...)
}
