package tokenizer

// Model is the tokenizer the server speaks for: the built-in pseudo-word
// vocabulary of this package (Builtin), or a model's real tokenizer loaded
// from its files. Implementations are immutable and safe for concurrent use.
type Model interface {
	// Encode tokenizes prompt text. addSpecialTokens adds what the
	// tokenizer's post-processor adds (e.g. a BOS token), as vLLM does for
	// completions prompts but not for rendered chat prompts.
	Encode(text string, addSpecialTokens bool) []uint32
	// TokenStrings returns the vocabulary string of each of text's ids, as
	// /tokenize reports them with return_token_strs.
	TokenStrings(text string, ids []uint32) []string
	// DecodeLiteral renders ids as /detokenize does: special tokens as
	// their literal strings.
	DecodeLiteral(ids []uint32) string
	// TokenText returns one token's text as logprobs show it (special
	// tokens literally; a byte-level piece that is part of a multi-byte
	// character as its decoded bytes).
	TokenText(id uint32) string
	// VocabSize is the number of token ids; valid ids are [0, VocabSize).
	VocabSize() int
	// EOS is the id that ends a naturally finished output.
	EOS() uint32
	// Draw maps a uniform 64-bit random draw to a generated token id from
	// the model's ordinary vocabulary (never a special token).
	Draw(r uint64) uint32
	// NewDecoder returns an incremental detokenizer for one generated
	// sequence.
	NewDecoder() Decoder
}

// Decoder turns generated ids into visible text one token at a time, as
// vLLM's incremental detokenizer does: text that ends inside a multi-byte
// character is held back until the character completes, so the pieces
// always concatenate to the decoded sequence.
type Decoder interface {
	// Next returns the text that token id completes (possibly "").
	Next(id uint32) string
}

// Builtin returns the built-in tokenizer as a Model.
func Builtin() Model { return builtin{} }

// IsBuiltin reports whether m is the built-in tokenizer (nil counts as the
// built-in one), whose per-token text needs no decoder state.
func IsBuiltin(m Model) bool {
	_, ok := m.(builtin)
	return m == nil || ok
}

type builtin struct{}

func (builtin) Encode(text string, _ bool) []uint32           { return Encode(text) }
func (builtin) TokenStrings(text string, _ []uint32) []string { return Pieces(text) }
func (builtin) DecodeLiteral(ids []uint32) string             { return DecodeLiteral(ids) }
func (builtin) TokenText(id uint32) string                    { return LiteralText(id) }
func (builtin) VocabSize() int                                { return VocabSize }
func (builtin) EOS() uint32                                   { return EOS }
func (builtin) NewDecoder() Decoder                           { return builtinDecoder{} }

// Draw maps r as the built-in output distribution does: one draw in 20 is
// ".", one ",", the rest a word token.
func (builtin) Draw(r uint64) uint32 {
	switch r % 20 {
	case 0:
		return Period
	case 1:
		return Comma
	}
	return WordBase + uint32((r>>8)%NumWords)
}

// builtinDecoder needs no state: every built-in token is whole text.
type builtinDecoder struct{}

func (builtinDecoder) Next(id uint32) string { return TokenText(id) }
