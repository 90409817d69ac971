package hftokenizer

// Tokenizer encodes and decodes text with a model's Hugging Face
// tokenizer. It is immutable after Load and safe for concurrent use.
type Tokenizer struct {
	normalize   normalizer // nil: none
	preTokenize preTokenizerSpec
	model       *bpeModel
	postProcess postProcessor
	decoder     decoderSpec

	added []addedToken
	// addedByContent finds an added token by its content, and by its
	// normalized content for tokens with normalized=true.
	addedByContent map[string]int
	rawTrie        *tokenTrie // tokens matched before normalization
	normalizedTrie *tokenTrie // tokens matched after normalization

	// tokens holds the string of every id (vocabulary and added tokens);
	// "" where an id has none. It exists while Load builds the tokenizer;
	// freeze then moves it, with the model's string → id map, into vocab.
	tokens  []string
	vocab   *vocabTable
	special []bool // per id: skipped by skip_special_tokens
	isAdded []bool // per id: an added token

	cleanUpSpaces bool
	chatTemplate  string
	addBOS        *bool
	bos, eos      namedToken
}

// namedToken is a token the config names (bos_token, eos_token).
type namedToken struct {
	text string
	id   uint32
	ok   bool
}

// TokenString returns the vocabulary string of id, e.g. "Ġhello" for a
// byte-level vocabulary or "▁hello" for a SentencePiece one.
func (t *Tokenizer) TokenString(id uint32) (string, bool) {
	token := t.token(id)
	return token, token != ""
}

// token is id's string, "" when it has none.
func (t *Tokenizer) token(id uint32) string {
	if t.vocab != nil {
		return t.vocab.token(id)
	}
	if int(id) >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// freeze replaces the tables Load built for lookups by their compact,
// pointer-free form (see vocabTable). Nothing may add tokens afterwards.
func (t *Tokenizer) freeze() {
	t.vocab = newVocabTable(t.tokens, t.model.tokenIDs)
	t.model.frozen = t.vocab
	t.tokens, t.model.tokenIDs, t.model.vocab = nil, nil, nil
}

// TokenID returns the id of a vocabulary or added token string.
func (t *Tokenizer) TokenID(token string) (uint32, bool) {
	if i, ok := t.addedByContent[token]; ok {
		return t.added[i].id, true
	}
	return t.model.tokenID(token)
}

// VocabSize is the largest id plus one, added tokens included.
func (t *Tokenizer) VocabSize() int {
	if t.vocab != nil {
		return t.vocab.size()
	}
	return len(t.tokens)
}

// IsSpecial reports whether id is a special token (removed by
// Decode(…, skipSpecialTokens=true)).
func (t *Tokenizer) IsSpecial(id uint32) bool {
	return int(id) < len(t.special) && t.special[id]
}

// OrdinaryIDs returns, in increasing order, the ids a model would sample
// as plain text: vocabulary tokens that are not added or special tokens,
// not the unknown token, and not byte-fallback pieces (<0xNN>, which
// stand for a fragment of a character).
func (t *Tokenizer) OrdinaryIDs() []uint32 {
	fallback := map[int32]bool{}
	if t.model.byteFallback {
		for _, id := range t.model.fallbackIDs {
			fallback[id] = true
		}
	}
	ids := make([]uint32, 0, t.VocabSize())
	for id := range t.VocabSize() {
		if t.token(uint32(id)) == "" || t.isAdded[id] || t.special[id] || int32(id) == t.model.unkID || fallback[int32(id)] {
			continue
		}
		ids = append(ids, uint32(id))
	}
	return ids
}

// BOSToken returns the config's bos_token and its id.
func (t *Tokenizer) BOSToken() (text string, id uint32, ok bool) {
	return t.bos.text, t.bos.id, t.bos.ok
}

// EOSToken returns the config's eos_token and its id.
func (t *Tokenizer) EOSToken() (text string, id uint32, ok bool) {
	return t.eos.text, t.eos.id, t.eos.ok
}

// AddBOSToken returns tokenizer_config.json's add_bos_token and whether
// the file sets it. It is informational: what Encode adds with
// addSpecialTokens is decided by tokenizer.json's post-processor, as in
// tokenizers.js.
func (t *Tokenizer) AddBOSToken() (value, set bool) {
	if t.addBOS == nil {
		return false, false
	}
	return *t.addBOS, true
}

// ChatTemplate returns the Jinja chat template ("" when there is none).
func (t *Tokenizer) ChatTemplate() string { return t.chatTemplate }
