package pipeline

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/media"
)

// A request's mm_processor_kwargs (docs/multimodal.md, "mm_processor_kwargs").
// vLLM copies the request's field into the engine prompt (_preprocess_chat:
// chat, Responses, /tokenize with messages); its processor merges it over
// the server's --mm-processor-kwargs for every call of the HF processor
// (MultiModalConfig.merge_mm_processor_kwargs), while the item hash takes
// the request's kwargs alone (BaseMultiModalProcessor._hash_mm_items, at
// vllm-project/vllm@41fff23aadde2fcc55d0ba7f7750e10ce012ef84): the same
// image under other kwargs is another item, in the processor cache and in
// the KV blocks that cover it.

// MMKwargs is a request's mm_processor_kwargs.
type MMKwargs struct {
	// Fields are the kwargs in the request's key order (the order vLLM's
	// hash follows).
	Fields []media.Field
	// text is their compact JSON, the processor-cache key's part for them.
	text string
}

// ReadMMKwargs reads a request's mm_processor_kwargs. A value that is not
// a JSON object is the field's type error, recorded in o; null and an
// absent field are no kwargs.
func ReadMMKwargs(o wire.Object) MMKwargs {
	r, ok := o.Kind("mm_processor_kwargs", "object")
	if !ok {
		return MMKwargs{}
	}
	fs, err := media.FieldsFromJSON(r)
	if err != nil {
		o.Fail(wire.ErrFieldType(o.Name("mm_processor_kwargs"), "object"))
		return MMKwargs{}
	}
	if len(fs) == 0 {
		return MMKwargs{}
	}
	var b bytes.Buffer
	if json.Compact(&b, r) != nil {
		b.Write(r)
	}
	return MMKwargs{Fields: fs, text: b.String()}
}

// mmScope is one request's view of the multimodal settings: the server's,
// with the processor its mm_processor_kwargs configure and those kwargs in
// every item's hash.
type mmScope struct {
	opts settings.MultimodalOptions
	// kw is the kwargs' text, mixed into processor-cache keys ("": none).
	kw string
}

// mmScopeFor returns the scope of a request with kwargs kw. Kwargs the
// model's processor refuses (a non-integer max_pixels, a do_pan_and_scan
// that is not a boolean) are a 400 naming mm_processor_kwargs, as vLLM answers
// its processor's error with a 400.
func (s *Server) mmScopeFor(kw MMKwargs) (*mmScope, *wire.APIError) {
	sc := &mmScope{opts: s.opts.Multimodal}
	if len(kw.Fields) == 0 || sc.opts.Processor == nil {
		return sc, nil
	}
	p, err := sc.opts.Processor.WithKwargs(kw.Fields)
	if err != nil {
		return nil, wire.ErrInvalid("mm_processor_kwargs", "%s", err.Error())
	}
	sc.opts.Processor = p
	sc.opts.Hash.MMProcessorKwargs = kw.Fields
	sc.kw = kw.text
	return sc, nil
}

// cacheKey is k, the key of an item as sent, under the request's kwargs:
// the cached hash includes them.
func (sc *mmScope) cacheKey(k media.Key) media.Key {
	if sc.kw == "" {
		return k
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], k.Lo)
	binary.LittleEndian.PutUint64(b[8:], k.Hi)
	return media.Fingerprint(string(b[:]), sc.kw)
}
