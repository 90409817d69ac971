package hftokenizer

import "encoding/json"

// tokenizerFile is the part of tokenizer.json this package reads. Pipeline
// components stay raw until compiled, so that a null component and an
// unsupported one can be told apart.
type tokenizerFile struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	Model         modelJSON        `json:"model"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
}

// addedTokenJSON is one entry of tokenizer.json's added_tokens (and, keyed
// by id, of tokenizer_config.json's added_tokens_decoder).
type addedTokenJSON struct {
	ID         uint32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized *bool  `json:"normalized"`
	Special    bool   `json:"special"`
}

// modelJSON is tokenizer.json's model. Vocab and Merges stay raw: their
// shape depends on the model type and on the file's age (merges are either
// "a b" strings or ["a", "b"] pairs).
type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

// componentJSON is the union of the fields of every normalizer,
// pre-tokenizer, post-processor and decoder this package understands; the
// Type field says which of them apply.
type componentJSON struct {
	Type string `json:"type"`

	// Sequence members, one list per component kind.
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`

	// Replace, Split.
	Pattern  *patternJSON `json:"pattern"`
	Content  *string      `json:"content"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`

	// Prepend.
	Prepend string `json:"prepend"`

	// ByteLevel.
	AddPrefixSpace *bool `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`

	// Metaspace.
	Replacement   *string `json:"replacement"`
	PrependScheme string  `json:"prepend_scheme"`
	Split         *bool   `json:"split"`

	// Strip decoder.
	Start int `json:"start"`
	Stop  int `json:"stop"`

	// TemplateProcessing.
	Single        []templateItemJSON          `json:"single"`
	SpecialTokens map[string]specialTokenJSON `json:"special_tokens"`
}

// patternJSON is a Replace/Split pattern: a literal string or a regex.
type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// templateItemJSON is one element of a TemplateProcessing template.
type templateItemJSON struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

// specialTokenJSON is one entry of TemplateProcessing's special_tokens.
type specialTokenJSON struct {
	ID  string   `json:"id"`
	IDs []uint32 `json:"ids"`
}

// tokenizerConfigFile is the part of tokenizer_config.json this package
// reads. Token fields are raw because they are either a string or an
// {"content": …} object; chat_template is a string or a list of
// {name, template}.
type tokenizerConfigFile struct {
	ChatTemplate              json.RawMessage           `json:"chat_template"`
	BOSToken                  json.RawMessage           `json:"bos_token"`
	EOSToken                  json.RawMessage           `json:"eos_token"`
	AddBOSToken               *bool                     `json:"add_bos_token"`
	AddedTokensDecoder        map[string]addedTokenJSON `json:"added_tokens_decoder"`
	AdditionalSpecialTokens   []json.RawMessage         `json:"additional_special_tokens"`
	CleanUpTokenizationSpaces *bool                     `json:"clean_up_tokenization_spaces"`
	RemoveSpace               *bool                     `json:"remove_space"`
	DoLowercaseAndRemoveAcc   *bool                     `json:"do_lowercase_and_remove_accent"`
}

// isNull reports whether a raw component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
