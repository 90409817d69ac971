package plan

import (
	"strings"
	"unicode/utf8"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Text plans an output whose text is decided up front — a structured
// output, a serialized tool call — instead of drawn token by token. The
// tokens are the model tokenizer's encoding of each part in turn (a part
// never shares a token with the next, so a renderer can tell which part a
// position belongs to, see Part), followed by EOS: the engine paces them
// like any output, usage counts them, and MaxTokens cuts them (finish
// "length", a prefix of the text). Stop token ids and stop strings apply
// as in Plan; reasoning framing and the output length mode do not.
//
// Visible text: Segment(pos) is the text of position pos and the segments
// concatenate to exactly the parts. The built-in tokenizer does not
// round-trip arbitrary text (it hashes unknown pieces to ids whose own text
// differs), so each position shows the piece it was encoded from; a loaded
// tokenizer shows what its incremental decoder releases when that
// reproduces the part exactly, else the part split over its tokens.
func Text(p Params, parts []string) Result {
	model := p.Model
	if model == nil {
		model = builtinModel
	}
	var ids []uint32
	var partOf []int32
	var ends []int32
	var text strings.Builder
	for index, part := range parts {
		partIDs := model.Encode(part, false)
		pieces := pieceTexts(model, part, partIDs)
		for i, id := range partIDs {
			text.WriteString(pieces[i])
			ids = append(ids, id)
			partOf = append(partOf, int32(index))
			ends = append(ends, int32(text.Len()))
		}
	}
	res := Result{FinishReason: engine.FinishStop, NaturalEnd: true}
	ids = append(ids, model.EOS())
	partOf = append(partOf, int32(max(len(parts)-1, 0)))
	ends = append(ends, int32(text.Len()))
	if m := max(p.MaxTokens, 0); len(ids) > m {
		ids, partOf, ends = ids[:m], partOf[:m], ends[:m]
		res.FinishReason, res.NaturalEnd = engine.FinishLength, false
	}
	res.IDs, res.parts, res.ends = ids, partOf, ends
	res.decoded = text.String()
	if len(p.StopTokenIDs) > 0 || len(p.Stop) > 0 {
		applyStops(&res, &p, max(p.MinTokens, 0))
	}
	return res
}

// Part returns the index of the part (of Text's parts) that position pos
// belongs to; the final EOS belongs to the last part. It is -1 for a plan
// Plan made.
func (r *Result) Part(pos int) int {
	if r.parts == nil || pos < 0 || pos >= len(r.parts) {
		return -1
	}
	return int(r.parts[pos])
}

// pieceTexts returns the visible text of each of part's ids; the texts
// concatenate to part.
func pieceTexts(model tokenizer.Model, part string, ids []uint32) []string {
	if tokenizer.IsBuiltin(model) {
		if pieces := tokenizer.Pieces(part); len(pieces) == len(ids) {
			return pieces
		}
	} else {
		dec := model.NewDecoder()
		pieces := make([]string, len(ids))
		var b strings.Builder
		for i, id := range ids {
			pieces[i] = dec.Next(id)
			b.WriteString(pieces[i])
		}
		if b.String() == part {
			return pieces
		}
	}
	return splitEvenly(part, len(ids))
}

// splitEvenly cuts text into n pieces of about equal byte length on
// character boundaries (some may be empty when n exceeds the characters).
func splitEvenly(text string, n int) []string {
	pieces := make([]string, n)
	start := 0
	for i := range n {
		end := len(text) * (i + 1) / n
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		end = max(end, start)
		pieces[i] = text[start:end]
		start = end
	}
	return pieces
}
