package pipeline

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// How a multimodal chat request becomes prompt tokens, as vLLM does it:
//
//  1. The chat parser hands each item to the template the way the
//     template takes content: a {"type": "image"} part (vLLM's "openai"
//     content format, templates that loop over content), or its
//     placeholder text on a line of its own before the message's text
//     ("string" format, and the built-in ChatML template).
//  2. The template renders; the prompt is tokenized.
//  3. The processor replaces the i-th placeholder of a modality with the
//     i-th item's replacement tokens (PromptReplacement): usage, the
//     context-length check and the KV blocks see the expanded prompt.

// placeholderTexts returns the messages with each item's placeholder text
// in front of its message's text, "\n"-joined (vLLM's
// _get_full_multimodal_text_prompt without interleaving), or with
// interleave (--interleave-mm-strings) where its part stands among the
// message's text parts, every part "\n"-joined (vLLM's
// _get_interleaved_text_prompt).
func placeholderTexts(fam mmproc.Family, msgs []tokenizer.Message, items []mmItem, interleave bool) []tokenizer.Message {
	out := append([]tokenizer.Message(nil), msgs...)
	seen := map[input.Modality]int{}
	texts := make([]string, len(items))
	for i, it := range items {
		seen[it.part.Modality]++
		texts[i] = placeholderText(fam, it, seen[it.part.Modality])
	}
	for m := range out {
		var phs []string
		var parts []input.MediaPart
		for i, it := range items {
			if it.part.Msg == m {
				phs = append(phs, texts[i])
				parts = append(parts, it.part)
			}
		}
		switch {
		case len(phs) == 0:
		case interleave:
			out[m].Content = interleaved(out[m].Content, phs, parts)
		default:
			out[m].Content = strings.Join(append(phs, out[m].Content), "\n")
		}
	}
	return out
}

// interleaved puts the placeholders phs of a message's media parts among
// its text parts, whose "\n"-joined text is content: each part knows how
// many text parts precede it and where they end in content, so the runs
// of text between the items are slices of content.
func interleaved(content string, phs []string, parts []input.MediaPart) string {
	var els []string
	prevTexts, prevAt := 0, 0
	from := func() int { // where the text run after the previous item starts
		if prevTexts == 0 {
			return 0
		}
		return min(prevAt+1, len(content)) // past the "\n" before the next text
	}
	for i, p := range parts {
		if p.TextsBefore > prevTexts && p.At >= from() && p.At <= len(content) {
			els = append(els, content[from():p.At])
		}
		els = append(els, phs[i])
		prevTexts, prevAt = p.TextsBefore, p.At
	}
	if last := parts[len(parts)-1]; last.TextsInMsg > prevTexts {
		els = append(els, content[from():])
	}
	return strings.Join(els, "\n")
}

// placeholderMessages rewrites the raw messages of a template render: a
// message with items gets its content as vLLM's chat parser builds it,
// the string of placeholderTexts (asString) or the list of its parts with
// each item as {"type": "<modality>"} and each text as {"type": "text",
// "text": …}. Other keys keep their order.
func placeholderMessages(fam mmproc.Family, raw json.RawMessage, msgs []tokenizer.Message, items []mmItem, asString, interleave bool) (json.RawMessage, *wire.APIError) {
	elems, e := wire.ParseArray(raw, "messages")
	if e != nil {
		return nil, e
	}
	texts := placeholderTexts(fam, msgs, items, interleave)
	for m := range elems {
		var mine []mmItem
		for _, it := range items {
			if it.part.Msg == m {
				mine = append(mine, it)
			}
		}
		if len(mine) == 0 {
			continue
		}
		var content []byte
		if asString {
			content, _ = json.Marshal(texts[m].Content)
		} else {
			var err error
			if content, err = openAIParts(elems[m], mine); err != nil {
				return nil, wire.ErrFieldType("messages["+wire.Itoa(m)+"].content", "array")
			}
		}
		elems[m] = replaceKey(elems[m], "content", content)
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i, el := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(el)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// placeholderText is the text vLLM's chat parser puts in a "string"
// content for the n-th item of its modality: the model class's
// get_placeholder_str (vLLM's model files), which wraps the processor's
// target in the model's markers; other families get the target alone.
func placeholderText(fam mmproc.Family, it mmItem, n int) string {
	switch fam {
	case mmproc.FamilyQwen2VL, mmproc.FamilyQwen25VL, mmproc.FamilyQwen3VL:
		if strings.HasPrefix(it.repl.Target, "<|vision_start|>") {
			return it.repl.Target // Qwen3-VL video: the target is the markers and the pad
		}
		return "<|vision_start|>" + it.repl.Target + "<|vision_end|>"
	case mmproc.FamilyQwen2Audio:
		return "Audio " + wire.Itoa(n) + ": <|audio_bos|>" + it.repl.Target + "<|audio_eos|>"
	case mmproc.FamilyQwen25Omni:
		if it.part.Modality == input.ModalityAudio {
			return "Audio " + wire.Itoa(n) + ": <|audio_bos|>" + it.repl.Target + "<|audio_eos|>"
		}
		return "<|vision_start|>" + it.repl.Target + "<|vision_end|>"
	}
	return it.repl.Target
}

// openAIParts rebuilds a message's content parts in vLLM's "openai" form.
func openAIParts(msg json.RawMessage, items []mmItem) ([]byte, error) {
	var m struct {
		Content []struct {
			Type string  `json:"type"`
			Text *string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('[')
	k := 0
	for j, p := range m.Content {
		var part []byte
		switch {
		case p.Type == "text" && p.Text != nil:
			t, _ := json.Marshal(*p.Text)
			part = append(append([]byte(`{"type": "text", "text": `), t...), '}')
		case k < len(items) && strings.HasSuffix(items[k].part.Path, ".content["+wire.Itoa(j)+"]"):
			part = []byte(`{"type": "` + string(itemModality(items[k].part.Modality)) + `"}`)
			k++
		default:
			continue
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		b.Write(part)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// itemModality is the type vLLM gives an item's part in the "openai"
// content format: image_embeds are images there, audio_embeds audio.
func itemModality(m input.Modality) input.Modality {
	return input.Modality(m.LimitKey())
}

// replaceKey returns the JSON object obj with key's value replaced by val
// (appended when absent), keeping the other keys in their order.
func replaceKey(obj json.RawMessage, key string, val []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if _, err := dec.Token(); err != nil { // {
		return obj
	}
	var b bytes.Buffer
	b.WriteByte('{')
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return obj
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return obj
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteString(": ")
		if k == key {
			b.Write(val)
			found = true
		} else {
			b.Write(v)
		}
	}
	if !found {
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		kb, _ := json.Marshal(key)
		b.Write(kb)
		b.WriteString(": ")
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// expandPrompt tokenizes a rendered prompt and replaces the i-th
// placeholder of each modality with the i-th item of that modality's
// replacement tokens. It returns the ids and each item's run (offset,
// length) in them, in prompt order. A prompt whose placeholders do not
// match its items (a template that drops an item, or text that contains a
// placeholder) is a 400, as vLLM's processor refuses it.
//
// In SGLang mode it also gives the runs SGLang's scheduler pads with the
// items' pad values (sglangPads).
func (s *Server) expandPrompt(text string, items []mmItem, addSpecial bool) (expansion, *wire.APIError) {
	type occ struct{ pos, item int }
	var occs []occ
	byTarget := map[string][]int{} // target → its items in order
	var targets []string
	for i, it := range items {
		if _, ok := byTarget[it.repl.Target]; !ok {
			targets = append(targets, it.repl.Target)
		}
		byTarget[it.repl.Target] = append(byTarget[it.repl.Target], i)
	}
	for _, t := range targets {
		idx := byTarget[t]
		n := 0
		for from := 0; ; {
			p := strings.Index(text[from:], t)
			if p < 0 {
				break
			}
			if n < len(idx) {
				occs = append(occs, occ{from + p, idx[n]})
			}
			n++
			from += p + len(t)
		}
		if n != len(idx) {
			m := items[idx[0]].part.Modality
			return expansion{}, wire.ErrInvalid("messages", "Expected there to be %d prompt placeholders %q corresponding to %d %s items, but instead found %d prompt placeholders! Make sure the chat template renders every %s part.",
				len(idx), t, len(idx), m, n, m)
		}
	}
	sort.Slice(occs, func(a, b int) bool { return occs[a].pos < occs[b].pos })
	ids := make([]uint32, 0, len(text)/3)
	feats := make([]kv.MMFeature, 0, len(items))
	flops := make([]float64, 0, len(items))
	works := make([]*engine.EncoderWork, 0, len(items))
	var runs [][]kv.MMPad // each occurrence's embed runs (SGLang mode)
	sglang := s.opts.SGLang != nil
	pos := 0
	for k, o := range occs {
		ids = append(ids, s.tok.Encode(text[pos:o.pos], addSpecial && k == 0)...)
		it := items[o.item]
		start := len(ids)
		var embeds []kv.MMPad
		ids, embeds = s.appendReplacement(ids, it, sglang)
		feats = append(feats, kv.MMFeature{Identifier: it.id, Offset: start, Length: len(ids) - start})
		flops = append(flops, it.flops)
		works = append(works, it.work)
		if sglang {
			runs = append(runs, embeds)
		}
		pos = o.pos + len(it.repl.Target)
	}
	ids = append(ids, s.tok.Encode(text[pos:], addSpecial && len(occs) == 0)...)
	if !tokenizer.IsBuiltin(s.tok) {
		for k, o := range occs {
			s.widenRange(ids, &feats[k], items[o.item].repl)
		}
		ids = s.applyMerges(ids, items, feats, runs)
	}
	x := expansion{ids: ids, mm: feats, flops: flops, works: works}
	if sglang && s.opts.Multimodal.Processor != nil {
		order := make([]mmItem, len(occs))
		for k, o := range occs {
			order[k] = items[o.item]
		}
		x.pads = sglangPads(s.opts.Multimodal.Processor.Family(), order, runs)
	}
	return x, nil
}

// expansion is a multimodal prompt's token ids and its items' runs in
// them: vLLM's placeholder ranges (mm), the items' encoder FLOPs and
// encoder passes (works) in the same (prompt) order, and in SGLang mode
// the runs of pad values.
type expansion struct {
	ids   []uint32
	mm    []kv.MMFeature
	flops []float64
	works []*engine.EncoderWork
	pads  []kv.MMPad
}

// applyMerges fuses the token pairs the items' replacements ask for
// (Replacement.Merges: Gemma 3's newlines at the joins), as vLLM's
// _apply_token_matches does over the whole prompt, and moves the items'
// ranges and pad runs with their tokens.
func (s *Server) applyMerges(ids []uint32, items []mmItem, feats []kv.MMFeature, runs [][]kv.MMPad) []uint32 {
	var merges []mmproc.Merge
	for _, it := range items {
		if len(it.repl.Merges) > 0 {
			merges = it.repl.Merges // one family: the same merges for every item
			break
		}
	}
	if len(merges) == 0 {
		return ids
	}
	one := func(t string) (uint32, bool) {
		if v := s.tok.Encode(t, false); len(v) == 1 {
			return v[0], true
		}
		return 0, false
	}
	out, pos := mmproc.ApplyMergesIndexed(ids, merges, one)
	for k := range feats {
		if feats[k].Offset < len(pos) {
			feats[k].Offset = pos[feats[k].Offset]
		}
	}
	for _, r := range runs {
		for j := range r {
			if r[j].Offset < len(pos) {
				r[j].Offset = pos[r[j].Offset]
			}
		}
	}
	return out
}

// widenRange extends an item's range over the tokens vLLM's placeholder
// range also covers around the replacement (Replacement.Before and After:
// Qwen2-Audio's <|audio_bos|> and <|audio_eos|>), when the template put
// them there.
func (s *Server) widenRange(ids []uint32, f *kv.MMFeature, r mmproc.Replacement) {
	var before, after []uint32
	for _, t := range r.Before {
		before = append(before, s.tok.Encode(t, false)...)
	}
	for _, t := range r.After {
		after = append(after, s.tok.Encode(t, false)...)
	}
	if n := len(before); n > 0 && f.Offset >= n && slices.Equal(ids[f.Offset-n:f.Offset], before) {
		f.Offset -= n
		f.Length += n
	}
	if end, n := f.Offset+f.Length, len(after); n > 0 && end+n <= len(ids) && slices.Equal(ids[end:end+n], after) {
		f.Length += n
	}
}

// appendReplacement appends an item's replacement tokens: each piece's
// token text as the model's tokenizer encodes it, repeated. The built-in
// tokenizer has no placeholder tokens: each piece's copies are the
// stand-in id of the item's modality (mmStandIn), so the count is the
// processor's. With runs it also returns the runs of the pieces the
// encoder fills (Embed), the positions SGLang pads.
func (s *Server) appendReplacement(ids []uint32, it mmItem, runs bool) ([]uint32, []kv.MMPad) {
	builtin := tokenizer.IsBuiltin(s.tok)
	var embeds []kv.MMPad
	for _, p := range it.repl.Pieces {
		var one []uint32
		if builtin {
			one = []uint32{mmStandIn(it.part.Modality)}
		} else {
			one = s.tok.Encode(p.Token, false)
		}
		start := len(ids)
		for range p.Count {
			ids = append(ids, one...)
		}
		if runs && p.Embed && len(ids) > start {
			embeds = append(embeds, kv.MMPad{Offset: start, Length: len(ids) - start})
		}
	}
	return ids, embeds
}

// mmStandIn is the built-in tokenizer's placeholder id of a modality: the
// last ids of its vocabulary (docs/multimodal.md).
func mmStandIn(m input.Modality) uint32 {
	switch m {
	case input.ModalityAudio, input.ModalityAudioEmbeds:
		return tokenizer.VocabSize - 2
	case input.ModalityVideo:
		return tokenizer.VocabSize - 3
	}
	return tokenizer.VocabSize - 1
}

// TokenizeMultimodal renders and tokenizes chat messages with multimodal
// parts as a generation request does (/tokenize with messages): the
// placeholders expanded to the items' tokens, under the body's
// mm_processor_kwargs kw (vLLM's TokenizeChatRequest has the field).
func (s *Server) TokenizeMultimodal(o wire.Object, msgs []tokenizer.Message, parts []input.MediaPart, kw MMKwargs,
	tools []byte, addGen, contFinal, addSpecial bool) ([]uint32, *wire.APIError) {
	items, e := s.resolveMedia(parts, kw)
	if e != nil {
		return nil, e
	}
	text, e := s.renderChat(o, msgs, items, tools, addGen, contFinal)
	if e != nil {
		return nil, e
	}
	x, e := s.expandPrompt(text, items, addSpecial)
	return x.ids, e
}
