package chattemplate

import (
	"encoding/json"
	"testing"
)

// FuzzParseAndRenderNeverPanic feeds arbitrary templates and messages: the
// answer is a template or an error, a prompt or an error, never a panic.
func FuzzParseAndRenderNeverPanic(f *testing.F) {
	for _, seed := range []struct{ template, messages string }{
		{"{% for m in messages %}{{ m.role + ': ' + m.content }}\n{% endfor %}", `[{"role": "user", "content": "hi"}]`},
		{"{{ messages[0].content | tojson(indent=2) }}{{ messages | length }}", `[{"content": [1, 2.0, null]}]`},
		{"{% set ns = namespace(x=0) %}{% for m in messages if m.role in ['a'] %}{% set ns.x = ns.x + 1 %}{% endfor %}{{ ns.x ~ '' }}", `[{"role": "a"}]`},
		{"{{ raise_exception('no') if messages|length > 1 }}{{ messages[-1].content[::-1] }}", `[{"content": "abc"}, {"content": "d"}]`},
		{"{%- if x is defined -%}{{ x.y.z }}{%- else -%}{{ (1, 2)[0] }}{% endif %}{# c #}{% raw %}{{{% endraw %}", `[]`},
		{"{{ 'a' ~ none ~ 1.5 }}{{ messages.append(1) }}", `[]`},
	} {
		f.Add(seed.template, seed.messages)
	}
	f.Fuzz(func(t *testing.T, template, messages string) {
		tmpl, err := Parse(template)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(Input{Messages: json.RawMessage(messages), AddGenerationPrompt: true})
		_, _ = tmpl.Render(Input{Messages: json.RawMessage(messages), ContinueFinalMessage: true})
	})
}
