// Package input reads the request fields several surfaces share, in their
// OpenAI form: chat messages (with their tool calls), prompts as text or
// token ids, and stop strings. What it returns goes into the pipeline's
// typed input; errors name the field as the surface calls it.
package input

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// MaxStopStrings bounds a request's stop list (a 400 naming the field).
const MaxStopStrings = 64

// RawPrompt is a completions prompt as sent, before tokenization.
type RawPrompt struct {
	Text   string
	IDs    []uint32
	IsText bool
	// MM are a multimodal chat prompt's items' placeholder runs in IDs,
	// MMFLOPs their encoder FLOPs (0: unknown; engine.PrecomputedEmbeds:
	// embeddings the client sent, no encoder time).
	MM      []kv.MMFeature
	MMFLOPs []float64
	// MMWork are their encoder passes as operators (nil: unknown), for the
	// hardware timing model.
	MMWork []*engine.EncoderWork
	// MMPads are the items' pad-value runs the SGLang engine type keys its
	// radix cache on (nil in vLLM mode; engine.Request.MMPads).
	MMPads []kv.MMPad
}

// ParseMessages reads the chat messages (types only): each message's text
// (its text parts joined by newlines) and, separately, its multimodal parts
// in order (image_url, input_image, audio_url, input_audio, video_url,
// image_embeds, audio_embeds). It returns the path of the first part of another type, if
// any, for the value check.
func ParseMessages(o wire.Object) (msgs []tokenizer.Message, media []MediaPart, badPart string) {
	arr, ok := o.Raw("messages")
	if !ok {
		if o.Failed() == nil {
			o.Fail(wire.ErrFieldRequired("messages"))
		}
		return nil, nil, ""
	}
	elems, e := o.ArrayOf(arr, "messages")
	if e != nil {
		o.Fail(e)
		return nil, nil, ""
	}
	msgs = make([]tokenizer.Message, 0, len(elems))
	var b strings.Builder
	for i, raw := range elems {
		path := "messages[" + wire.Itoa(i) + "]"
		m, ok := o.Elem(raw, path, "object")
		if !ok {
			return nil, nil, ""
		}
		if !m.Has("role") {
			o.Fail(wire.ErrFieldRequired(path + ".role"))
			return nil, nil, ""
		}
		role, _ := m.String("role")
		var content string
		if c, ok := m.Raw("content"); ok {
			switch c[0] {
			case '"':
				content, _ = m.String("content")
			case '[':
				var ok bool
				if content, ok = parseContentParts(o, m, &b, path, i, &media, &badPart); !ok {
					return nil, nil, ""
				}
			case 'n':
				// null content: an assistant turn that only calls tools.
			default:
				o.Fail(wire.ErrFieldType(path+".content", "string"))
				return nil, nil, ""
			}
		}
		calls := toolcall.ParseToolCalls(o, m, path)
		if o.Failed() != nil {
			return nil, nil, ""
		}
		msgs = append(msgs, tokenizer.Message{Role: role, Content: content, ToolCalls: calls})
	}
	return msgs, media, badPart
}

// parseContentParts reads message i's content parts: its text parts joined
// by newlines, its multimodal parts appended to media, the path of the
// first part of no known type kept in badPart. false: a type error was
// recorded on o.
func parseContentParts(o, m wire.Object, b *strings.Builder, path string, i int, media *[]MediaPart, badPart *string) (string, bool) {
	parts, _ := m.Array("content")
	b.Reset()
	texts := 0
	for j, pr := range parts {
		ppath := path + ".content[" + wire.Itoa(j) + "]"
		part, ok := o.Elem(pr, ppath, "object")
		if !ok {
			return "", false
		}
		typ, hasType := part.String("type")
		if !hasType {
			if o.Failed() == nil {
				o.Fail(wire.ErrFieldRequired(ppath + ".type"))
			}
			return "", false
		}
		if typ != "text" {
			if mp, isMedia := parseMediaPart(o, part, typ, ppath); isMedia {
				if o.Failed() != nil {
					return "", false
				}
				mp.Msg = i
				mp.TextsBefore, mp.At = texts, b.Len()
				*media = append(*media, mp)
			} else if *badPart == "" {
				*badPart = ppath + ".type"
			}
			continue
		}
		if !part.Has("text") {
			o.Fail(wire.ErrFieldRequired(ppath + ".text"))
			return "", false
		}
		text, _ := part.String("text")
		if texts > 0 {
			b.WriteByte('\n')
		}
		texts++
		b.WriteString(text)
	}
	for k := len(*media) - 1; k >= 0 && (*media)[k].Msg == i; k-- {
		(*media)[k].TextsInMsg = texts
	}
	return b.String(), true
}

// ParsePrompt reads the completions prompt: a string, an array of strings,
// an array of ids or an array of id arrays. Emptiness and out-of-vocabulary
// ids are value errors reported after the model check.
func ParsePrompt(o wire.Object, key string, vocabSize int) (prompts []RawPrompt, empty bool, badID string) {
	raw, ok := o.Raw(key)
	if !ok {
		if o.Failed() == nil {
			o.Fail(wire.ErrFieldRequired(o.Name(key)))
		}
		return nil, false, ""
	}
	switch raw[0] {
	case '"':
		text, _ := o.String(key)
		return []RawPrompt{{Text: text, IsText: true}}, text == "", ""
	case '[':
	default:
		o.Fail(wire.ErrFieldType(o.Name(key), "string"))
		return nil, false, ""
	}
	path := o.Name(key)
	elems, e := wire.ParseArray(raw, path)
	if e != nil {
		o.Fail(e)
		return nil, false, ""
	}
	if len(elems) == 0 {
		return nil, true, ""
	}
	switch {
	case elems[0][0] == '"':
		prompts = make([]RawPrompt, len(elems))
		for i, el := range elems {
			s, e := wire.ParseString(el, path+"["+wire.Itoa(i)+"]")
			if e != nil {
				o.Fail(e)
				return nil, false, ""
			}
			empty = empty || s == ""
			prompts[i] = RawPrompt{Text: s, IsText: true}
		}
		return prompts, empty, ""
	case elems[0][0] == '[':
		prompts = make([]RawPrompt, len(elems))
		for i, el := range elems {
			ipath := path + "[" + wire.Itoa(i) + "]"
			inner, e := wire.ParseArray(el, ipath)
			if e != nil {
				o.Fail(e)
				return nil, false, ""
			}
			ids, bad, e := ParseIDs(inner, ipath, vocabSize)
			if e != nil {
				o.Fail(e)
				return nil, false, ""
			}
			empty = empty || len(ids) == 0
			if badID == "" {
				badID = bad
			}
			prompts[i] = RawPrompt{IDs: ids}
		}
		return prompts, empty, badID
	}
	ids, bad, e := ParseIDs(elems, path, vocabSize)
	if e != nil {
		o.Fail(e)
		return nil, false, ""
	}
	return []RawPrompt{{IDs: ids}}, false, bad
}

// ParseIDs reads an array of token ids. It returns the text of the first id
// outside the vocabulary (a value error) separately from type errors.
func ParseIDs(elems []json.RawMessage, path string, vocabSize int) (ids []uint32, badID string, err *wire.APIError) {
	ids = make([]uint32, len(elems))
	for i, el := range elems {
		v, e := wire.ParseInt(el, path+"["+wire.Itoa(i)+"]")
		if e != nil {
			return nil, "", e
		}
		if v.I < 0 || v.I >= int64(vocabSize) {
			if badID == "" {
				badID = v.Raw
			}
			continue
		}
		ids[i] = uint32(v.I)
	}
	return ids, badID, nil
}

// ParseStop reads stop: a string or an array of strings.
func ParseStop(o wire.Object) ([]string, bool) { return ParseStopAt(o, "stop") }

// ParseStopAt reads stop strings under a surface's name for them (SGLang's
// sampling_params.stop, Anthropic's stop_sequences).
func ParseStopAt(o wire.Object, key string) ([]string, bool) {
	raw, ok := o.Raw(key)
	if !ok {
		return nil, false
	}
	if raw[0] == '"' {
		s, _ := o.String(key)
		return []string{s}, o.Failed() == nil
	}
	path := o.Name(key)
	elems, e := wire.ParseArray(raw, path)
	if e != nil {
		o.Fail(wire.ErrFieldType(path, "array"))
		return nil, false
	}
	if len(elems) > MaxStopStrings {
		return make([]string, len(elems)), true // too many: reported as a value error
	}
	out := make([]string, len(elems))
	for i, el := range elems {
		s, e := wire.ParseString(el, path+"["+wire.Itoa(i)+"]")
		if e != nil {
			o.Fail(e)
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// maxRequestIDLen bounds an X-Request-Id or request_id taken as given.
const maxRequestIDLen = 512

// RequestID picks the base request id: the X-Request-Id
// header, else the body's request_id, each only if at most 512 bytes of
// printable ASCII; else 32 random lowercase hex characters (a UUIDv4).
func RequestID(header, body string) string {
	if validRequestID(header) {
		return header
	}
	if validRequestID(body) {
		return body
	}
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return hex.EncodeToString(u[:])
}

func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
