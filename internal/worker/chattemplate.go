package worker

import (
	"github.com/mocker-server/mocker-server/internal/api"
	"github.com/mocker-server/mocker-server/internal/chattemplate"
	"github.com/mocker-server/mocker-server/internal/config"
)

// requestChatTemplate is the compiler of a request's own chat_template
// under --trust-request-chat-template (nil without it): the template is
// parsed like a tokenizer's and bound to the served template's special
// tokens, so {{ bos_token }} means what it means in the model's own.
func requestChatTemplate(cfg *config.Config, served api.ChatRenderer) func(string) (api.ChatRenderer, error) {
	if !cfg.TrustRequestChatTemplate {
		return nil
	}
	var bos, eos string
	if r, ok := served.(chattemplate.Renderer); ok {
		bos, eos = r.BOSToken, r.EOSToken
	}
	return func(source string) (api.ChatRenderer, error) {
		t, err := chattemplate.Parse(source)
		if err != nil {
			return nil, err
		}
		return chattemplate.NewRenderer(t, bos, eos), nil
	}
}
