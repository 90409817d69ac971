package hftokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

// preTokenizer cuts a normalized section into pieces ("words") that the
// model encodes independently. sectionIndex is the section's position in
// the added-token split, which Metaspace's prepend_scheme "first" needs.
type preTokenizer interface {
	split(text string, sectionIndex int, emit func(string))
}

// preTokenizerSpec is a compiled pre_tokenizer: the splitting stages and
// whether pieces are then spelled in the byte-level alphabet.
type preTokenizerSpec struct {
	stages    []preTokenizer
	byteLevel bool
}

// compilePreTokenizer flattens tokenizer.json's pre_tokenizer. A ByteLevel
// step must come last: it only changes the alphabet (use_regex=false)
// unless it adds a prefix space.
func compilePreTokenizer(raw json.RawMessage) (preTokenizerSpec, error) {
	var spec preTokenizerSpec
	if isNull(raw) {
		return spec, nil
	}
	if err := spec.add(raw); err != nil {
		return spec, fmt.Errorf("pre_tokenizer: %w", err)
	}
	return spec, nil
}

func (spec *preTokenizerSpec) add(raw json.RawMessage) error {
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	if spec.byteLevel {
		return fmt.Errorf("%s after ByteLevel is not supported", c.Type)
	}
	switch c.Type {
	case "Sequence":
		for i, member := range c.Pretokenizers {
			if err := spec.add(member); err != nil {
				return fmt.Errorf("Sequence[%d]: %w", i, err)
			}
		}
		return nil
	case "Split":
		stage, err := compileSplit(c)
		if err != nil {
			return err
		}
		spec.stages = append(spec.stages, stage)
		return nil
	case "ByteLevel":
		if c.UseRegex == nil || *c.UseRegex {
			return fmt.Errorf("ByteLevel with use_regex=true (the GPT-2 split) is not supported; only after a Split, with use_regex=false")
		}
		if c.AddPrefixSpace != nil && *c.AddPrefixSpace {
			spec.stages = append(spec.stages, prefixSpace{})
		}
		spec.byteLevel = true
		return nil
	case "Metaspace":
		return spec.addMetaspace(c)
	}
	return fmt.Errorf("type %q is not supported (supported: Split, ByteLevel, Metaspace, Sequence)", c.Type)
}

func (spec *preTokenizerSpec) addMetaspace(c componentJSON) error {
	if c.Split != nil && *c.Split {
		return fmt.Errorf("Metaspace with split=true is not supported")
	}
	m := metaspace{replacement: "▁", scheme: "always"}
	if c.Replacement != nil {
		m.replacement = *c.Replacement
	}
	switch c.PrependScheme {
	case "":
		// Older files say add_prefix_space instead; false means never,
		// as the Rust crate reads it (tokenizers.js ignores the field).
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			m.scheme = "never"
		}
	case "always", "first", "never":
		m.scheme = c.PrependScheme
	default:
		return fmt.Errorf("Metaspace prepend_scheme %q is not supported", c.PrependScheme)
	}
	spec.stages = append(spec.stages, m)
	return nil
}

func compileSplit(c componentJSON) (preTokenizer, error) {
	if c.Pattern == nil {
		return nil, fmt.Errorf("Split: missing pattern")
	}
	if c.Invert {
		return nil, fmt.Errorf("Split with invert=true is not supported")
	}
	if c.Pattern.Regex != nil {
		p, ok := findSplitPattern(*c.Pattern.Regex)
		if !ok {
			return nil, fmt.Errorf("Split: regex %q is not supported (known: the Qwen2 and Llama 3 patterns)", *c.Pattern.Regex)
		}
		if c.Behavior != "Isolated" {
			return nil, fmt.Errorf("Split: behavior %q with a regex is not supported (only Isolated)", c.Behavior)
		}
		return regexSplit{p}, nil
	}
	sep, err := literalPattern("Split", c.Pattern)
	if err != nil {
		return nil, err
	}
	switch c.Behavior {
	case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext":
	default:
		return nil, fmt.Errorf("Split: behavior %q is not supported", c.Behavior)
	}
	return literalSplit{sep: sep, behavior: c.Behavior}, nil
}

// regexSplit runs one of the known split patterns.
type regexSplit struct{ pattern splitPattern }

func (s regexSplit) split(text string, _ int, emit func(string)) { s.pattern.split(text, emit) }

// literalSplit splits on a literal separator. The behaviours follow the
// Rust tokenizers crate. (tokenizers.js treats every behaviour but Removed
// as Isolated; for Gemma 3, the one model here with a literal Split, the
// separator " " never survives its normalizer, so both agree.)
type literalSplit struct {
	sep      string
	behavior string
}

func (s literalSplit) split(text string, _ int, emit func(string)) {
	var carry string // MergedWithNext: separator waiting for the next piece
	for {
		i := strings.Index(text, s.sep)
		if i < 0 {
			break
		}
		before, sep := text[:i], text[i:i+len(s.sep)]
		text = text[i+len(s.sep):]
		switch s.behavior {
		case "Isolated":
			emitNonEmpty(emit, before)
			emit(sep)
		case "Removed":
			emitNonEmpty(emit, before)
		case "MergedWithPrevious":
			emit(before + sep)
		case "MergedWithNext":
			emitNonEmpty(emit, carry+before)
			carry = sep
		}
	}
	emitNonEmpty(emit, carry+text)
}

func emitNonEmpty(emit func(string), s string) {
	if s != "" {
		emit(s)
	}
}

// prefixSpace is ByteLevel's add_prefix_space: a space before every piece
// that does not start with one.
type prefixSpace struct{}

func (prefixSpace) split(text string, _ int, emit func(string)) {
	if strings.HasPrefix(text, " ") {
		emit(text)
		return
	}
	emit(" " + text)
}

// metaspace replaces spaces with the replacement character (▁) and
// prepends one per its scheme; like tokenizers.js it does not split.
type metaspace struct {
	replacement string
	scheme      string // always | first | never
}

func (m metaspace) split(text string, sectionIndex int, emit func(string)) {
	text = strings.ReplaceAll(text, " ", m.replacement)
	if !strings.HasPrefix(text, m.replacement) &&
		(m.scheme == "always" || m.scheme == "first" && sectionIndex == 0) {
		text = m.replacement + text
	}
	emit(text)
}

// run applies the stages in order, each to every piece of the previous.
func (spec *preTokenizerSpec) run(text string, sectionIndex int, emit func(string)) {
	spec.runFrom(0, text, sectionIndex, emit)
}

func (spec *preTokenizerSpec) runFrom(stage int, text string, sectionIndex int, emit func(string)) {
	if stage == len(spec.stages) {
		emit(text)
		return
	}
	if stage == len(spec.stages)-1 {
		spec.stages[stage].split(text, sectionIndex, emit)
		return
	}
	spec.stages[stage].split(text, sectionIndex, func(piece string) {
		spec.runFrom(stage+1, piece, sectionIndex, emit)
	})
}
