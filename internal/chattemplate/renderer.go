package chattemplate

import "encoding/json"

// Renderer binds a template to a tokenizer's special tokens and vLLM's
// content-format choice; its RenderChat method is what the HTTP layer
// calls for every chat request.
type Renderer struct {
	Template           *Template
	BOSToken, EOSToken string
	ContentFormat      ContentFormat
}

// NewRenderer returns a Renderer with the content format vLLM's default
// ("auto") detects from the template.
func NewRenderer(t *Template, bosToken, eosToken string) Renderer {
	return Renderer{Template: t, BOSToken: bosToken, EOSToken: eosToken, ContentFormat: t.DetectContentFormat()}
}

// RenderChat renders one chat request.
func (r Renderer) RenderChat(messages, tools json.RawMessage, addGenerationPrompt, continueFinalMessage bool,
	kwargs map[string]json.RawMessage) (string, error) {
	return r.Template.Render(Input{
		Messages:             messages,
		Tools:                tools,
		AddGenerationPrompt:  addGenerationPrompt,
		ContinueFinalMessage: continueFinalMessage,
		Kwargs:               kwargs,
		BOSToken:             r.BOSToken,
		EOSToken:             r.EOSToken,
		ContentFormat:        r.ContentFormat,
	})
}

// StringContent reports whether the template takes message content as one
// string (vLLM's "string" format), so a multimodal part must be rendered as
// its placeholder text in the content rather than as a {"type": "image"}
// part.
func (r Renderer) StringContent() bool { return r.ContentFormat == ContentString }
