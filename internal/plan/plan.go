package plan

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// Reasoning is the reasoning framing configuration (--reasoning).
type Reasoning struct {
	StartID uint32  // start_thinking_token_id
	EndID   uint32  // end_thinking_token_id
	Ratio   float64 // thinking_ratio, 0 ≤ ratio ≤ 1
}

// Params are the inputs of Plan for one choice. The caller has validated
// them (see docs/http-api.md for the checks).
type Params struct {
	Seed             uint64 // from RequestSeed
	Choice           int
	MaxTokens        int     // effective max tokens M; 0 = empty plan
	SetsMax          bool    // the request sent max_tokens or max_completion_tokens
	Chat             bool    // chat endpoint (vs completions)
	Mode             LenMode // "" counts as ModeNatural
	NaturalOutputLen int     // --natural-output-len, the median natural length (0 = 128)
	NaturalSigma     float64 // --natural-output-len-sigma (0 = DefaultNaturalSigma)
	IgnoreEOS        bool
	MinTokens        int
	StopTokenIDs     []uint32
	// Stop strings (empty strings are ignored).
	Stop                   []string
	IncludeStopStrInOutput bool
	Reasoning              *Reasoning // nil = no reasoning framing
	// Model draws the output ids and renders their text; nil means the
	// built-in tokenizer.
	Model tokenizer.Model
}

// StopKind tells which kind of value a StopReason holds.
type StopKind uint8

const (
	StopNone    StopKind = iota // stop_reason null
	StopString                  // stop_reason is the matched stop string
	StopTokenID                 // stop_reason is the matched stop token id
)

// StopReason is the stop_reason of a choice: null, a string or an integer.
// It marshals to JSON as exactly that (null / "..." / 123).
type StopReason struct {
	Kind    StopKind
	String  string // Kind == StopString
	TokenID uint32 // Kind == StopTokenID
}

// Value returns nil, the string, or the token id as uint32.
func (s StopReason) Value() any {
	switch s.Kind {
	case StopString:
		return s.String
	case StopTokenID:
		return s.TokenID
	}
	return nil
}

// MarshalJSON encodes null, a JSON string or an integer.
func (s StopReason) MarshalJSON() ([]byte, error) {
	switch s.Kind {
	case StopString:
		return json.Marshal(s.String)
	case StopTokenID:
		return strconv.AppendUint(nil, uint64(s.TokenID), 10), nil
	}
	return []byte("null"), nil
}

// Result is the planned output of one choice.
//
// Rendering: the visible text of position pos is Segment(pos). Every
// position renders its token's text (for a loaded tokenizer, the text its
// incremental decoder released at that position) except reasoning boundary
// positions (0 and ThinkLen−1, never rendered), the natural-end EOS (renders
// "" anyway), and — when a stop string ended the output — the positions from
// the one where the cut falls to the end, whose text is truncated so that the
// concatenation of all segments is exactly the final text. Because the plan is
// known up front a streaming renderer needs no hold-back buffer: it emits
// Segment(pos) for each delivered token.
type Result struct {
	// IDs are the planned output token ids (the engine's input).
	IDs []uint32
	// FinishReason is engine.FinishStop or engine.FinishLength.
	FinishReason engine.FinishReason
	// StopReason is the stop_reason (null for length and natural end).
	StopReason StopReason
	// NaturalEnd reports an EOS-terminated natural end:
	// the last id is EOS (0), counted, not rendered.
	NaturalEnd bool
	// ThinkLen is the reasoning framing length: IDs[0] is the start id,
	// IDs[ThinkLen−1] the end id, positions [1, ThinkLen−1) are reasoning
	// text and positions ≥ ThinkLen content. 0 = no reasoning framing.
	// Positions beyond len(IDs) (cut off by a stop rule) do not exist.
	ThinkLen int

	// decoded holds the text of every position for a loaded tokenizer,
	// whose pieces depend on their neighbours (a multi-byte character
	// split over tokens), as one string; position pos's text ends at
	// ends[pos] and starts where the previous one ends. ends is nil for
	// the built-in tokenizer. One string plus int32 offsets rather than a
	// []string per position: a thousand string headers per request were
	// a 16 KB pointer-holding allocation, and reading them scattered loads
	// over the streaming hot path.
	decoded string
	ends    []int32

	// parts, for a plan of fixed text (Text), is the index of the part
	// each position's token belongs to; nil otherwise.
	parts []int32

	cut     bool   // a stop string truncated the text
	cutPos  int    // first position whose text the cut truncates
	cutText string // visible text of cutPos after the cut; later positions render ""
}

// Reasoning reports whether position pos is reasoning text (1 ≤ pos < ThinkLen−1).
func (r *Result) Reasoning(pos int) bool {
	return pos >= 1 && pos < r.ThinkLen-1
}

// Segment returns the visible text of the token at position pos
// (0 ≤ pos < len(IDs)) and whether it belongs to the reasoning text. Empty
// text means the token produces no text chunk. It never allocates.
func (r *Result) Segment(pos int) (text string, reasoning bool) {
	reasoning = r.Reasoning(pos)
	if r.cut && pos >= r.cutPos {
		if pos == r.cutPos {
			return r.cutText, reasoning
		}
		return "", reasoning
	}
	if r.ThinkLen > 0 && (pos == 0 || pos == r.ThinkLen-1) {
		return "", false
	}
	if r.ends != nil {
		return r.decodedText(pos), reasoning
	}
	return tokenizer.TokenText(r.IDs[pos]), reasoning
}

// decodedText is position pos's slice of the decoded text.
func (r *Result) decodedText(pos int) string {
	start := int32(0)
	if pos > 0 {
		start = r.ends[pos-1]
	}
	return r.decoded[start:r.ends[pos]]
}

// Texts returns the reasoning and content text of the first n planned tokens
// (n is clamped to [0, len(IDs)]; the engine may deliver fewer tokens than
// planned when it hits max_model_len). Completions concatenate the two.
func (r *Result) Texts(n int) (reasoning, content string) {
	n = min(max(n, 0), len(r.IDs))
	var rb, cb []byte
	for pos := 0; pos < n; pos++ {
		t, isR := r.Segment(pos)
		if isR {
			rb = append(rb, t...)
		} else {
			cb = append(cb, t...)
		}
	}
	return string(rb), string(cb)
}

// AppendText appends the whole visible text (reasoning followed by content)
// of the first n planned tokens to dst.
func (r *Result) AppendText(dst []byte, n int) []byte {
	n = min(max(n, 0), len(r.IDs))
	for pos := 0; pos < n; pos++ {
		t, _ := r.Segment(pos)
		dst = append(dst, t...)
	}
	return dst
}

// Plan computes the planned output of one choice: (1) a pseudo-random token
// per position, (2) an optional natural end, (3) reasoning framing, then
// (4) stop token ids and (5) stop strings, position by position.
// It runs in O(M) time with one allocation of M ids (plus a window buffer
// bounded by the longest stop string when stop strings are given).
func Plan(p Params) Result {
	m := max(p.MaxTokens, 0)
	minTokens := max(p.MinTokens, 0)
	model := p.Model
	if model == nil {
		model = builtinModel
	}

	// Step 2, first because it fixes the length: natural end.
	n, natural := outputLen(&p, m)
	res := planBody(&p, model, n, natural)
	// A natural end shows a visible answer. Built-in tokens always have
	// visible text, but a loaded tokenizer's short content can decode to
	// nothing visible (a lone space, part of a UTF-8 character): the answer
	// then runs on a token at a time, as a model that has not yet said
	// anything would (a bounded few tries; the limit ends it otherwise).
	for try := 0; natural && try < maxVisibleTries && !tokenizer.IsBuiltin(model) && !res.visibleContent(); try++ {
		if n++; n >= m {
			n, natural = m, false
		}
		res = planBody(&p, model, n, natural)
	}

	// Steps 4–5: stop token ids and stop strings, position by position.
	if len(p.StopTokenIDs) > 0 || len(p.Stop) > 0 {
		applyStops(&res, &p, minTokens)
	}
	return res
}

// maxVisibleTries bounds how far Plan extends a natural end whose content
// shows no visible text.
const maxVisibleTries = 16

// planBody is Plan's steps 1 and 3 for an output of n tokens: r(c, pos)
// for the body, EOS last on a natural end, the reasoning framing with
// osl = body length, and a loaded tokenizer's decoded text.
func planBody(p *Params, model tokenizer.Model, n int, natural bool) Result {
	body := n
	if natural {
		body = n - 1
	}
	ids := make([]uint32, n)
	for pos := 0; pos < body; pos++ {
		ids[pos] = model.Draw(draw(p.Seed, p.Choice, pos))
	}
	if natural {
		ids[n-1] = model.EOS()
	}

	res := Result{IDs: ids, FinishReason: engine.FinishLength, NaturalEnd: natural}
	if natural {
		res.FinishReason = engine.FinishStop
	}

	if p.Reasoning != nil {
		if tl := contentThinkLen(body, p.Reasoning.Ratio, natural); tl > 0 {
			ids[0] = p.Reasoning.StartID
			ids[tl-1] = p.Reasoning.EndID
			res.ThinkLen = tl
		}
	}

	if !tokenizer.IsBuiltin(model) {
		res.decoded, res.ends = decodePositions(model, &res, body)
	}
	return res
}

// visibleContent reports whether the content (the positions after the
// reasoning framing) renders some non-space text.
func (r *Result) visibleContent() bool {
	for pos := r.ThinkLen; pos < len(r.IDs); pos++ {
		if t, _ := r.Segment(pos); strings.TrimSpace(t) != "" {
			return true
		}
	}
	return false
}

// applyStops evaluates stop token ids and stop strings together position by
// position (Plan's steps 4–5); the earliest position wins, and at
// the same position a stop token id wins (it is step 4). Among stop strings
// matching at the same position the first in list order wins, taking its
// earliest occurrence ending inside the newest token's text (vLLM).
func applyStops(res *Result, p *Params, minTokens int) {
	ids := res.IDs

	// Stop token ids: a sorted copy (on the stack for ≤ 64 ids).
	var stack [64]uint32
	stopIDs := append(stack[:0], p.StopTokenIDs...)
	slices.Sort(stopIDs)

	// Stop strings: the visible text is kept in a window holding at least
	// the last maxLen+8 bytes (enough for any occurrence ending in the
	// newest token, whose text is at most 7 bytes).
	maxLen := 0
	for _, s := range p.Stop {
		maxLen = max(maxLen, len(s))
	}
	var buf []byte
	keep := maxLen + 8
	const chunk = 1024
	if maxLen > 0 {
		buf = make([]byte, 0, keep+chunk+16)
	}

	for pos := range ids {
		var text string
		if maxLen > 0 {
			text, _ = res.Segment(pos)
			if len(buf)+len(text) > cap(buf) {
				drop := len(buf) - keep
				copy(buf, buf[drop:])
				buf = buf[:keep]
			}
			buf = append(buf, text...)
		}
		if pos < minTokens {
			continue
		}
		if len(stopIDs) > 0 {
			if _, found := slices.BinarySearch(stopIDs, ids[pos]); found {
				res.IDs = ids[:pos+1]
				res.FinishReason = engine.FinishStop
				res.StopReason = StopReason{Kind: StopTokenID, TokenID: ids[pos]}
				if res.ends != nil && !p.IncludeStopStrInOutput {
					// vLLM does not feed a stop-terminating token to its
					// incremental detokenizer (unless
					// include_stop_str_in_output), so nothing it would
					// have released shows. The built-in tokenizer keeps
					// rendering it, as it always has.
					// pos is now the last position: ending it where it
					// starts empties it.
					if pos > 0 {
						res.ends[pos] = res.ends[pos-1]
					} else {
						res.ends[pos] = 0
					}
				}
				res.NaturalEnd = res.NaturalEnd && pos == len(ids)-1
				return
			}
		}
		if len(text) == 0 {
			continue // no occurrence can end inside empty text
		}
		cur := len(buf)         // end of the newest token's text (window offset)
		prev := cur - len(text) // its start
		for _, s := range p.Stop {
			if s == "" {
				continue
			}
			last := s[len(s)-1]
			for e := max(prev+1, len(s)); e <= cur; e++ {
				if buf[e-1] != last || string(buf[e-len(s):e]) != s {
					continue
				}
				cutOff := e - len(s)
				if p.IncludeStopStrInOutput {
					cutOff = e
				}
				res.IDs = ids[:pos+1]
				res.FinishReason = engine.FinishStop
				res.StopReason = StopReason{Kind: StopString, String: s}
				res.NaturalEnd = false
				if cutOff < cur {
					cutText(res, buf, pos, prev, cutOff)
				}
				return
			}
		}
	}
}

// cutText records the truncation of the visible text at window offset
// cutOff. pos is the last position, whose text starts at window offset prev.
func cutText(res *Result, buf []byte, pos, prev, cutOff int) {
	q, start := pos, prev
	for start > cutOff {
		q--
		t, _ := res.Segment(q)
		start -= len(t)
	}
	// Now start ≤ cutOff < end of q's text.
	res.cut = true
	res.cutPos = q
	res.cutText = string(buf[start:cutOff])
}

// decodePositions runs a loaded tokenizer's incremental decoder over the
// body of a plan and returns the text all positions release, with the end
// offset of each position's part (one per id; positions past the body end
// where the body does). Reasoning boundary markers and the natural-end EOS
// render nothing and are not fed to the decoder, like the special tokens
// vLLM skips when detokenizing.
func decodePositions(model tokenizer.Model, res *Result, body int) (string, []int32) {
	ends := make([]int32, len(res.IDs))
	dec := model.NewDecoder()
	skip := func(pos int) bool { return res.ThinkLen > 0 && (pos == 0 || pos == res.ThinkLen-1) }
	app, _ := dec.(textAppender)
	// One buffer for the whole output: a string per token cost two
	// allocations each and made planning 1,000 tokens cost as much as
	// streaming them.
	buf := make([]byte, 0, 8*body)
	for pos := 0; pos < body; pos++ {
		if !skip(pos) {
			if app != nil {
				buf = app.AppendNext(buf, res.IDs[pos])
			} else {
				buf = append(buf, dec.Next(res.IDs[pos])...)
			}
		}
		ends[pos] = int32(len(buf))
	}
	for pos := body; pos < len(ends); pos++ {
		ends[pos] = int32(len(buf))
	}
	// The string shares buf's memory (as strings.Builder does): nothing
	// writes buf again, and copying it would allocate a second buffer of
	// the whole output for every request.
	return unsafe.String(unsafe.SliceData(buf), len(buf)), ends
}

// textAppender is a tokenizer.Decoder that can append a token's text to a
// buffer instead of returning a new string.
type textAppender interface {
	AppendNext(dst []byte, id uint32) []byte
}
