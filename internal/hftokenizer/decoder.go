package hftokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// decoderSpec is a compiled decoder. Every supported decoder reduces to
// the same per-token model, which is what lets the stream decoder produce
// exactly the text of a full decode:
//
//   - each token becomes either raw bytes (byte-level tokens, <0xNN>
//     byte-fallback tokens) or literal text (added tokens in byte-level
//     mode; every other token after per-token replacements);
//   - consecutive raw bytes form a group decoded as UTF-8 with
//     replacement characters; literal text ends a group;
//   - optionally the first token loses one leading space (Metaspace) and
//     the text loses leading strip characters (Strip after Fuse).
//
// Decoders outside that model fail Load.
type decoderSpec struct {
	byteLevel    bool
	replacements [][2]string // per token, in order: old → new
	byteFallback bool
	fused        bool
	// stripFirstToken: Metaspace drops one leading space of token 0.
	stripFirstToken bool
	// stripChar/stripCount: Strip (after Fuse) removes up to stripCount
	// leading stripChar characters of the whole text.
	stripChar  string
	stripCount int

	// pieces is, per id, what the token decodes to (filled by index); the
	// texts live in pieceText. Offsets into one string instead of a string
	// per id keep the 150k-entry table free of pointers, so the garbage
	// collector has nothing to scan in it, and half the size (12 bytes), so
	// the random lookups of a stream touch fewer cache lines.
	pieces    []decodePiece
	pieceText string
}

// decodePiece is one token's contribution to decoded text:
// pieceText[start:end].
type decodePiece struct {
	start, end uint32
	flags      pieceFlags
}

// pieceFlags describe a decodePiece.
type pieceFlags uint8

const (
	// pieceBytes: the text is raw bytes of a byte group, not literal text.
	pieceBytes pieceFlags = 1 << iota
	// pieceWhole: bytes that form complete, valid UTF-8 on their own,
	// which the stream decoder can pass through when nothing is pending.
	pieceWhole
	// pieceAbsent: no token has this id (a gap in the vocabulary).
	pieceAbsent
)

func (p decodePiece) is(f pieceFlags) bool { return p.flags&f != 0 }

// text returns what piece p decodes to.
func (d *decoderSpec) text(p decodePiece) string { return d.pieceText[p.start:p.end] }

func compileDecoder(raw json.RawMessage) (decoderSpec, error) {
	var spec decoderSpec
	if isNull(raw) {
		return spec, fmt.Errorf("decoder: none (a tokenizer without a decoder is not supported)")
	}
	if err := spec.add(raw); err != nil {
		return spec, fmt.Errorf("decoder: %w", err)
	}
	return spec, nil
}

func (d *decoderSpec) add(raw json.RawMessage) error {
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if d.byteLevel {
		return fmt.Errorf("%s after ByteLevel is not supported", c.Type)
	}
	perTokenStage := !d.byteFallback && !d.fused && d.stripCount == 0
	switch c.Type {
	case "Sequence":
		for i, member := range c.Decoders {
			if err := d.add(member); err != nil {
				return fmt.Errorf("Sequence[%d]: %w", i, err)
			}
		}
		return nil
	case "ByteLevel":
		if len(d.replacements) > 0 || !perTokenStage {
			return fmt.Errorf("ByteLevel after other decoders is not supported")
		}
		d.byteLevel = true
		return nil
	case "Replace":
		if !perTokenStage {
			return fmt.Errorf("Replace after ByteFallback, Fuse or Strip is not supported")
		}
		from, err := literalPattern("Replace", c.Pattern)
		if err != nil {
			return err
		}
		to := ""
		if c.Content != nil {
			to = *c.Content
		}
		d.replacements = append(d.replacements, [2]string{from, to})
		return nil
	case "Metaspace":
		if !perTokenStage || d.stripFirstToken {
			return fmt.Errorf("Metaspace after ByteFallback, Fuse, Strip or Metaspace is not supported")
		}
		replacement := "▁"
		if c.Replacement != nil {
			replacement = *c.Replacement
		}
		d.replacements = append(d.replacements, [2]string{replacement, " "})
		d.stripFirstToken = true
		return nil
	case "ByteFallback":
		if d.byteFallback || d.fused || d.stripCount > 0 {
			return fmt.Errorf("ByteFallback after ByteFallback, Fuse or Strip is not supported")
		}
		d.byteFallback = true
		return nil
	case "Fuse":
		d.fused = true
		return nil
	case "Strip":
		if !d.fused {
			return fmt.Errorf("Strip before Fuse (per token) is not supported")
		}
		if c.Stop != 0 {
			return fmt.Errorf("Strip with stop=%d is not supported (only start)", c.Stop)
		}
		if d.stripCount > 0 {
			return fmt.Errorf("two Strip decoders are not supported")
		}
		if c.Content == nil || len([]rune(*c.Content)) != 1 {
			return fmt.Errorf("Strip: content must be one character")
		}
		d.stripChar, d.stripCount = *c.Content, c.Start
		return nil
	}
	return fmt.Errorf("type %q is not supported (supported: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)", c.Type)
}

// index computes every id's decodePiece.
func (d *decoderSpec) index(t *Tokenizer) {
	added := make(map[string]bool, len(t.added))
	for _, a := range t.added {
		added[a.content] = true
	}
	d.pieces = make([]decodePiece, len(t.tokens))
	var all strings.Builder
	for id, token := range t.tokens {
		text, isBytes := d.piece(token, added[token])
		p := decodePiece{start: uint32(all.Len())}
		all.WriteString(text)
		p.end = uint32(all.Len())
		if isBytes {
			p.flags |= pieceBytes
			if utf8.ValidString(text) {
				p.flags |= pieceWhole
			}
		}
		if token == "" {
			p.flags |= pieceAbsent
		}
		d.pieces[id] = p
	}
	d.pieceText = all.String()
}

// piece returns what token decodes to and whether that is raw bytes of a
// byte group (rather than literal text).
func (d *decoderSpec) piece(token string, isAdded bool) (text string, isBytes bool) {
	if d.byteLevel {
		if isAdded {
			return token, false
		}
		return byteLevelDecode(token), true
	}
	for _, r := range d.replacements {
		token = strings.ReplaceAll(token, r[0], r[1])
	}
	if d.byteFallback {
		if b, ok := fallbackByte(token); ok {
			return string([]byte{b}), true
		}
	}
	return token, false
}

// fallbackByte recognises "<0xNN>" as tokenizers.js does: six characters,
// "<0x" … ">", and the hex value parsed like JavaScript's parseInt (which
// stops at the first non-hex character).
func fallbackByte(token string) (byte, bool) {
	if len(token) != 6 || !strings.HasPrefix(token, "<0x") || token[5] != '>' {
		return 0, false
	}
	hi, ok := hexDigit(token[3])
	if !ok {
		return 0, false
	}
	if lo, ok := hexDigit(token[4]); ok {
		return hi<<4 | lo, true
	}
	return hi, true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// cleanUpTokenization removes the spaces English tokenizers put before
// punctuation and contractions — transformers' clean_up_tokenization, the
// same replacements in the same order.
func cleanUpTokenization(text string) string {
	if !strings.Contains(text, " ") {
		return text
	}
	for _, r := range cleanUpReplacements {
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	return text
}

var cleanUpReplacements = [][2]string{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

// cleanUpReach is the longest clean-up pattern minus one: text more than
// this many bytes before the next space can no longer change.
const cleanUpReach = 3
