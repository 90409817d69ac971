package hftokenizer

import "github.com/mocker-server/mocker-server/internal/tokenizer"

// Model adapts t to the server's tokenizer.Model: prompts are encoded with
// t, generated ids are drawn from its ordinary vocabulary (never a special
// or byte-fallback token) and rendered with its incremental decoder, and
// its eos_token ends a natural output.
func (t *Tokenizer) Model() tokenizer.Model {
	m := &model{tok: t, ordinary: t.OrdinaryIDs()}
	if _, id, ok := t.EOSToken(); ok {
		m.eos = id
	}
	return m
}

type model struct {
	tok      *Tokenizer
	ordinary []uint32
	eos      uint32
}

func (m *model) Encode(text string, addSpecialTokens bool) []uint32 {
	return m.tok.Encode(text, addSpecialTokens)
}

func (m *model) TokenStrings(_ string, ids []uint32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i], _ = m.tok.TokenString(id)
	}
	return out
}

func (m *model) DecodeLiteral(ids []uint32) string { return m.tok.Decode(ids, false) }

func (m *model) TokenText(id uint32) string { return m.tok.Decode([]uint32{id}, false) }

func (m *model) VocabSize() int { return m.tok.VocabSize() }

func (m *model) EOS() uint32 { return m.eos }

// Draw picks uniformly among the ordinary ids.
func (m *model) Draw(r uint64) uint32 { return m.ordinary[r%uint64(len(m.ordinary))] }

func (m *model) NewDecoder() tokenizer.Decoder {
	return streamDecoder{m.tok.NewStreamDecoder(true)}
}

// streamDecoder skips special tokens, as vLLM's detokenizer does by
// default for generated text.
type streamDecoder struct{ d *StreamDecoder }

func (s streamDecoder) Next(id uint32) string { return s.d.Add(id) }
