package hftokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds the special tokens of add_special_tokens around an
// encoded single sequence: prefix ids, the sequence, suffix ids.
type postProcessor struct {
	prefix, suffix []uint32
}

// compilePostProcessor supports TemplateProcessing (single-sequence
// template), ByteLevel (no ids change: it only adjusts offsets) and
// Sequence of those.
func compilePostProcessor(raw json.RawMessage, t *Tokenizer) (postProcessor, error) {
	var p postProcessor
	if err := p.add(raw, t); err != nil {
		return p, fmt.Errorf("post_processor: %w", err)
	}
	return p, nil
}

func (p *postProcessor) add(raw json.RawMessage, t *Tokenizer) error {
	if isNull(raw) {
		return nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return err
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for i, member := range c.Processors {
			if err := p.add(member, t); err != nil {
				return fmt.Errorf("Sequence[%d]: %w", i, err)
			}
		}
		return nil
	case "TemplateProcessing":
		return p.addTemplate(c, t)
	}
	return fmt.Errorf("type %q is not supported (supported: TemplateProcessing, ByteLevel, Sequence)", c.Type)
}

func (p *postProcessor) addTemplate(c componentJSON, t *Tokenizer) error {
	var prefix, suffix []uint32
	seenSequence := false
	for i, item := range c.Single {
		switch {
		case item.Sequence != nil:
			if item.Sequence.ID != "A" || seenSequence {
				return fmt.Errorf("TemplateProcessing single[%d]: sequence %q is not supported (one sequence A)", i, item.Sequence.ID)
			}
			seenSequence = true
		case item.SpecialToken != nil:
			ids, err := templateTokenIDs(item.SpecialToken.ID, c.SpecialTokens, t)
			if err != nil {
				return fmt.Errorf("TemplateProcessing single[%d]: %w", i, err)
			}
			if seenSequence {
				suffix = append(suffix, ids...)
			} else {
				prefix = append(prefix, ids...)
			}
		default:
			return fmt.Errorf("TemplateProcessing single[%d]: neither SpecialToken nor Sequence", i)
		}
	}
	if !seenSequence {
		return fmt.Errorf("TemplateProcessing: the single template has no sequence A")
	}
	// A later processor wraps what earlier ones produced.
	p.prefix = append(prefix, p.prefix...)
	p.suffix = append(p.suffix, suffix...)
	return nil
}

func templateTokenIDs(name string, specials map[string]specialTokenJSON, t *Tokenizer) ([]uint32, error) {
	if s, ok := specials[name]; ok && len(s.IDs) > 0 {
		return s.IDs, nil
	}
	if id, ok := t.TokenID(name); ok {
		return []uint32{id}, nil
	}
	return nil, fmt.Errorf("special token %q is not defined", name)
}
