package pipeline

import (
	"encoding/json"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/toolcall"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/tokenizer"
)

// RenderChat renders a parsed chat request with the configured template,
// or with the built-in ChatML template when none is configured.
func (s *Server) RenderChat(o wire.Object, msgs []tokenizer.Message, tools []byte, addGen, contFinal bool) (string, *wire.APIError) {
	return s.renderChat(o, msgs, nil, tools, addGen, contFinal)
}

// renderChat renders the messages; a chat request with multimodal items
// passes them so that each is rendered as vLLM's chat parser hands it to
// the template (placeholderMessages).
func (s *Server) renderChat(o wire.Object, msgs []tokenizer.Message, items []mmItem, tools []byte, addGen, contFinal bool) (string, *wire.APIError) {
	chat := s.chat
	if o.Has("chat_template") {
		// vLLM renders a request's own template only when the operator
		// trusts requests (--trust-request-chat-template); otherwise it
		// refuses rather than silently ignore it.
		if !s.opts.HTTP.TrustRequestChatTemplate || s.reqChat == nil {
			return "", wire.ErrInvalid("chat_template", "Chat template is passed with request, but "+
				"--trust-request-chat-template is not set. Refused request with untrusted chat template.")
		}
		source, ok := o.String("chat_template")
		if !ok {
			return "", o.Failed()
		}
		var err error
		if chat, err = s.reqChat(source); err != nil {
			return "", wire.ErrInvalid("chat_template", "Invalid chat template: %s", err.Error())
		}
	}
	if chat == nil {
		if len(items) > 0 {
			msgs = placeholderTexts(s.placeholderFamily(), msgs, items, s.opts.Multimodal.InterleaveStrings)
		}
		return tokenizer.RenderChat(msgs, tools, addGen, contFinal), nil
	}
	messages, _ := o.Raw("messages")
	if len(items) > 0 {
		sc, _ := chat.(interface{ StringContent() bool })
		var e *wire.APIError
		if messages, e = placeholderMessages(s.placeholderFamily(), messages, msgs, items, sc != nil && sc.StringContent(), s.opts.Multimodal.InterleaveStrings); e != nil {
			return "", e
		}
	}
	messages, e := toolcall.ArgumentsAsObjects(messages)
	if e != nil {
		return "", e
	}
	var kwargs map[string]json.RawMessage
	if raw, ok := o.Kind("chat_template_kwargs", "object"); ok {
		if err := json.Unmarshal(raw, &kwargs); err != nil {
			return "", wire.ErrInvalid("chat_template_kwargs", "chat_template_kwargs must be an object: %v", err)
		}
	}
	if e := o.Failed(); e != nil {
		return "", e
	}
	text, err := chat.RenderChat(messages, tools, addGen, contFinal, kwargs)
	if err != nil {
		return "", wire.ErrInvalid("", "%s", err.Error())
	}
	return text, nil
}

// PoolingChatIDs renders and tokenizes the chat form of a pooling request
// (embeddings, classify, pooling): messages with vLLM's pooling defaults,
// add_generation_prompt and add_special_tokens false (its
// ChatRequestOptionsMixin), tools and chat_template_kwargs as in chat.
func (s *Server) PoolingChatIDs(o wire.Object) ([]uint32, *wire.APIError) {
	msgs, media, badPart := input.ParseMessages(o)
	if len(media) > 0 && badPart == "" {
		// Multimodal pooling is not built (docs/pooling.md).
		return nil, wire.ErrInvalid(media[0].Path+".type", "The pooling endpoints of mocker-server take text content parts only.")
	}
	var tools []byte
	if a, ok := o.Kind("tools", "array"); ok {
		tools = wire.CompactJSON(a)
	}
	addGen := o.Bool("add_generation_prompt", false)
	contFinal := o.Bool("continue_final_message", false)
	addSpecial := o.Bool("add_special_tokens", false)
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if e := CheckMessages(msgs, badPart, ""); e != nil {
		return nil, e
	}
	if e := CheckChatFlags(addGen, contFinal); e != nil {
		return nil, e
	}
	text, e := s.RenderChat(o, msgs, tools, addGen, contFinal)
	if e != nil {
		return nil, e
	}
	return s.tok.Encode(text, addSpecial), nil
}

// placeholderFamily is the family whose placeholder text a "string"
// content gets; the built-in tokenizer has no marker tokens, so it gets the
// processor's target alone (its stand-in, docs/multimodal.md).
func (s *Server) placeholderFamily() mmproc.Family {
	if tokenizer.IsBuiltin(s.tok) {
		return ""
	}
	return s.opts.Multimodal.Processor.Family()
}
