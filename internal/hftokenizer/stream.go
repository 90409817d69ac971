package hftokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decode returns the text of ids. skipSpecialTokens drops special tokens
// (e.g. <|im_end|>), as Hugging Face's skip_special_tokens does. Ids
// outside the vocabulary decode as the unknown token, or to nothing when
// the model has none.
func (t *Tokenizer) Decode(ids []uint32, skipSpecialTokens bool) string {
	d := t.NewStreamDecoder(skipSpecialTokens)
	out := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		out = d.appendToken(out, id)
	}
	return string(d.appendFlush(out))
}

// StreamDecoder decodes ids one at a time, the way vLLM's incremental
// detokenizer streams text: a token that ends inside a UTF-8 character is
// held back until the character completes, and text that a later token
// could still change (a space the clean-up may remove, a leading space the
// Strip decoder may remove) waits for it. The concatenation of everything
// Add and Flush return equals Decode of all the ids. Not safe for
// concurrent use; make one per stream.
type StreamDecoder struct {
	tok         *Tokenizer
	skipSpecial bool
	tokens      int    // tokens decoded so far (Metaspace strips token 0)
	stripLeft   int    // leading strip characters that may still be removed
	pending     []byte // bytes of an unfinished character
	held        []byte // decoded text the clean-up may still change
	scratch     []byte
}

// NewStreamDecoder starts an incremental decode.
func (t *Tokenizer) NewStreamDecoder(skipSpecialTokens bool) *StreamDecoder {
	return &StreamDecoder{tok: t, skipSpecial: skipSpecialTokens, stripLeft: t.decoder.stripCount}
}

// Prime feeds context ids — the end of the prompt — without returning
// their text, so that the next Add continues mid-sequence instead of at
// the start: the first generated "▁Hello" then streams as " Hello", not
// "Hello". vLLM primes its incremental detokenizer with the prompt's last
// tokens the same way. Bytes of a character the context leaves unfinished
// stay pending (the next token may complete it); context text held for
// the clean-up is dropped.
func (d *StreamDecoder) Prime(ids []uint32) {
	var discard []byte
	for _, id := range ids {
		discard = d.appendToken(discard[:0], id)
	}
	d.held = d.held[:0]
}

// Add decodes one more id and returns the text it completes (often "").
func (d *StreamDecoder) Add(id uint32) string {
	return string(d.appendToken(nil, id))
}

// AppendAdd is Add that appends the text to dst instead of returning a new
// string, so a caller decoding many ids can keep all their text in one
// buffer.
func (d *StreamDecoder) AppendAdd(dst []byte, id uint32) []byte {
	return d.appendToken(dst, id)
}

// Flush ends the stream and returns what was held back; an unfinished
// character becomes U+FFFD.
func (d *StreamDecoder) Flush() string {
	return string(d.appendFlush(nil))
}

func (d *StreamDecoder) appendToken(dst []byte, id uint32) []byte {
	t := d.tok
	if int(id) >= len(t.decoder.pieces) || t.decoder.pieces[id].is(pieceAbsent) {
		if t.model.unkID == noToken {
			return dst
		}
		id = uint32(t.model.unkID)
	}
	if d.skipSpecial && t.special[id] {
		return dst
	}
	first := d.tokens == 0
	d.tokens++
	piece := t.decoder.pieces[id]
	pieceText := t.decoder.text(piece)
	if piece.is(pieceWhole) && len(d.pending) == 0 && d.stripLeft == 0 && !t.cleanUpSpaces {
		// The common byte-level case: complete characters, nothing to
		// hold back or rewrite.
		return append(dst, pieceText...)
	}
	text := d.scratch[:0]
	if piece.is(pieceBytes) {
		d.pending = append(d.pending, pieceText...)
		var n int
		text, n = appendLossyUTF8(text, d.pending, false)
		d.pending = append(d.pending[:0], d.pending[len(d.pending)-n:]...)
	} else {
		text = d.flushPending(text)
		literal := pieceText
		if first && t.decoder.stripFirstToken {
			literal = strings.TrimPrefix(literal, " ")
		}
		text = append(text, literal...)
	}
	d.scratch = text[:0]
	return d.emit(dst, text, false)
}

func (d *StreamDecoder) flushPending(dst []byte) []byte {
	if len(d.pending) == 0 {
		return dst
	}
	dst, _ = appendLossyUTF8(dst, d.pending, true)
	d.pending = d.pending[:0]
	return dst
}

func (d *StreamDecoder) appendFlush(dst []byte) []byte {
	text := d.flushPending(d.scratch[:0])
	d.scratch = text[:0]
	return d.emit(dst, text, true)
}

// emit passes complete text through the Strip and clean-up stages.
func (d *StreamDecoder) emit(dst, text []byte, final bool) []byte {
	if char := d.tok.decoder.stripChar; d.stripLeft > 0 {
		for d.stripLeft > 0 && len(text) > 0 {
			if !strings.HasPrefix(string(text), char) {
				d.stripLeft = 0
				break
			}
			text = text[len(char):]
			d.stripLeft--
		}
	}
	if !d.tok.cleanUpSpaces {
		return append(dst, text...)
	}
	d.held = append(d.held, text...)
	cut := len(d.held)
	if !final {
		cut = safeCleanUpCut(d.held)
	}
	if cut == 0 {
		return dst
	}
	dst = append(dst, cleanUpTokenization(string(d.held[:cut]))...)
	d.held = append(d.held[:0], d.held[cut:]...)
	return dst
}

// safeCleanUpCut returns the longest prefix of text whose clean-up cannot
// depend on what follows: no clean-up pattern (they all start with a space
// and span at most cleanUpReach+1 bytes) may straddle the cut, so the
// cleanUpReach bytes before it must hold no space. The cut also falls on
// a character boundary.
func safeCleanUpCut(text []byte) int {
	for cut := len(text); cut > 0; cut-- {
		if cut < len(text) && !utf8.RuneStart(text[cut]) {
			continue
		}
		window := text[max(0, cut-cleanUpReach):cut]
		if !strings.Contains(string(window), " ") {
			return cut
		}
	}
	return 0
}
