package pipeline

import (
	"strconv"
	"strings"

	"github.com/mocker-server/mocker-server/internal/api/input"
)

// setEchoTexts sets each prompt's EchoText as llm-d-inference-sim's echo
// mode picks it (tokenizedPromptForEcho in its chat_completion.go and
// text_completion.go): a chat echoes its last message's text whatever its
// role, a completion its prompt as sent, a prompt of token ids the ids
// joined by commas.
func setEchoTexts(g *GenRequest, in *GenInput, raw []input.RawPrompt) {
	if in.Chat {
		text := ""
		if len(in.Msgs) > 0 {
			text = in.Msgs[len(in.Msgs)-1].Content
		}
		for i := range g.Prompts {
			g.Prompts[i].EchoText = text
		}
		return
	}
	for i := range g.Prompts {
		if raw[i].IsText {
			g.Prompts[i].EchoText = raw[i].Text
			continue
		}
		var b strings.Builder
		for j, id := range raw[i].IDs {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatUint(uint64(id), 10))
		}
		g.Prompts[i].EchoText = b.String()
	}
}
