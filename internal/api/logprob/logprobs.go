// Package logprob renders a token's logprobs in the chat and completions
// forms (and their pieces for the Responses form), from the tokenizer and
// the synthetic logprob model of internal/plan.
package logprob

import (
	"strconv"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Renderer appends the synthetic logprobs (tokenizer.Logprob,
// tokenizer.TopCandidates) as JSON.
// It reuses its candidate buffer, so rendering allocates nothing once warm.
type Renderer struct {
	K     int  // chat top_logprobs / completions logprobs
	AsIDs bool // return_tokens_as_token_ids
	Tok   tokenizer.Model
	Cands []tokenizer.Candidate
}

const tokenIDPrefix = "token_id:"

// AppendToken appends the token string of id as a JSON string: its literal
// text, or token_id:<id>.
func (l *Renderer) AppendToken(b []byte, id uint32, text string) []byte {
	if l.AsIDs {
		b = append(b, '"')
		b = append(b, tokenIDPrefix...)
		b = strconv.AppendUint(b, uint64(id), 10)
		return append(b, '"')
	}
	return jsonenc.AppendString(b, text)
}

// AppendTokenBytes appends the UTF-8 bytes of the token string.
func (l *Renderer) AppendTokenBytes(b []byte, id uint32, text string) []byte {
	if !l.AsIDs {
		return wire.AppendByteValues(b, text)
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

// AppendChatEntry appends one chat logprobs content entry:
// {"token","logprob","bytes","top_logprobs":[k entries]}.
func (l *Renderer) AppendChatEntry(b []byte, id uint32) []byte {
	text := l.Tok.TokenText(id)
	b = append(b, `{"token":`...)
	b = l.AppendToken(b, id, text)
	b = append(b, `,"logprob":`...)
	b = wire.AppendFloat(b, tokenizer.Logprob(id))
	b = append(b, `,"bytes":`...)
	b = l.AppendTokenBytes(b, id, text)
	b = append(b, `,"top_logprobs":[`...)
	l.Cands = tokenizer.TopCandidates(l.Tok, id, l.K, l.Cands)
	for i := range l.Cands {
		c := &l.Cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"token":`...)
		b = l.AppendToken(b, c.ID, c.Text)
		b = append(b, `,"logprob":`...)
		b = wire.AppendFloat(b, c.Logprob)
		b = append(b, `,"bytes":`...)
		b = l.AppendTokenBytes(b, c.ID, c.Text)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// AppendChatList appends {"content":[one entry per id]}.
func (l *Renderer) AppendChatList(b []byte, ids []uint32) []byte {
	b = append(b, `{"content":[`...)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = l.AppendChatEntry(b, id)
	}
	return append(b, "]}"...)
}

// appendTopMap appends one completions top_logprobs object with max(k, 1)
// entries, sampled token first.
func (l *Renderer) appendTopMap(b []byte, id uint32) []byte {
	l.Cands = tokenizer.TopCandidates(l.Tok, id, max(l.K, 1), l.Cands)
	b = append(b, '{')
	for i := range l.Cands {
		c := &l.Cands[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = l.AppendToken(b, c.ID, c.Text)
		b = append(b, ':')
		b = wire.AppendFloat(b, c.Logprob)
	}
	return append(b, '}')
}

// AppendCompletionOne appends the completions logprobs of one streamed token
// at text offset offset.
func (l *Renderer) AppendCompletionOne(b []byte, id uint32, offset int) []byte {
	b = append(b, `{"text_offset":[`...)
	b = strconv.AppendInt(b, int64(offset), 10)
	b = append(b, `],"token_logprobs":[`...)
	b = wire.AppendFloat(b, tokenizer.Logprob(id))
	b = append(b, `],"tokens":[`...)
	b = l.AppendToken(b, id, l.Tok.TokenText(id))
	b = append(b, `],"top_logprobs":[`...)
	b = l.appendTopMap(b, id)
	return append(b, "]}"...)
}

// AppendCompletionLists appends the completions logprobs of a whole choice:
// text_offset counts characters from the start of the choice's text, whose
// first offset characters are the echoed prompt.
func (l *Renderer) AppendCompletionLists(b []byte, p *plan.Result, ids []uint32, offset int) []byte {
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
		b = wire.AppendFloat(b, tokenizer.Logprob(id))
	}
	b = append(b, `],"tokens":[`...)
	for pos, id := range ids {
		if pos > 0 {
			b = append(b, ',')
		}
		b = l.AppendToken(b, id, l.Tok.TokenText(id))
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
