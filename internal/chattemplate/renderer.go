package chattemplate

import "encoding/json"

// Renderer binds a template to a tokenizer's special tokens and vLLM's
// content format. Its RenderChat has the shape the HTTP layer asks of a
// chat renderer.
type Renderer struct {
	Template           *Template
	BOSToken, EOSToken string
	// ContentFormat is applied to every request; vLLM's default ("auto")
	// is Template.DetectContentFormat().
	ContentFormat ContentFormat
}

// RenderChat renders one chat request; see Template.Render for the errors.
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
