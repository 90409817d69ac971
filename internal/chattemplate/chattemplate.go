// Package chattemplate renders a model's chat template (Jinja) into the
// prompt text exactly as Hugging Face transformers' apply_chat_template
// does with tokenize=False: Jinja2 with trim_blocks and lstrip_blocks, the
// loopcontrols extension, a tojson filter that keeps non-ASCII text, the
// raise_exception and strftime_now globals, and the variables messages,
// tools, documents, add_generation_prompt, bos_token and eos_token plus any
// chat_template_kwargs. continue_final_message follows transformers too.
//
// Messages, tools and kwargs are taken as raw JSON so object key order
// survives: templates print tool schemas with tojson and iterate over
// parameter properties, and a reordered map would change the prompt.
//
// The Jinja engine is github.com/ardanlabs/jinja. Where it prints or
// filters differently from Jinja2 (None, floats, containers, tojson, trim,
// string literal escapes, the trailing newline) the template source is
// rewritten at Parse time to call this package's implementations; see
// prepareSource.
package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// Template is a parsed chat template. It is safe for concurrent use.
type Template struct {
	source string // as given, before prepareSource
	engine *jinja.Template
	// now is strftime_now's clock; tests fix it.
	now func() time.Time
}

// Parse compiles a chat template. A syntax error names the problem and,
// where known, the line.
func Parse(source string) (*Template, error) {
	prepared, lines, err := prepareSource(source)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	engine, err := compileEngine(prepared)
	switch {
	case errors.Is(err, ErrEngine):
		return nil, fmt.Errorf("chat template: %w", err)
	case err != nil:
		return nil, fmt.Errorf("chat template: %s", originalLines(err.Error(), lines))
	}
	return &Template{source: source, engine: engine, now: time.Now}, nil
}

// engineLine finds the line number in an engine error message.
var engineLine = regexp.MustCompile(`line (\d+)`)

// originalLines rewrites the engine's line numbers, which count lines of
// the rewritten source, into lines of the template as written.
func originalLines(message string, lines []int) string {
	return engineLine.ReplaceAllStringFunc(message, func(match string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(match, "line "))
		if err != nil || n < 1 || n > len(lines) {
			return match
		}
		return "line " + strconv.Itoa(lines[n-1])
	})
}

// compileEngine compiles with the engine, turning a panic into ErrEngine.
func compileEngine(source string) (engine *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrEngine, r)
		}
	}()
	return jinja.Compile(source)
}

// Load resolves a --chat-template value the way vLLM does: the path of a
// readable file holds the template. Otherwise a value without any of "{",
// "}" or a newline is taken for a path that failed to open (an error), and
// anything else is the template itself, with its backslash escapes decoded
// (vLLM runs it through Python's unicode_escape codec, so "\n" typed on a
// command line is a newline).
func Load(fileOrString string) (*Template, error) {
	data, err := os.ReadFile(fileOrString)
	if err == nil {
		tmpl, err := Parse(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", fileOrString, err)
		}
		return tmpl, nil
	}
	if !strings.ContainsAny(fileOrString, "{}\n") {
		return nil, fmt.Errorf("chat template %q looks like a file path, but it failed to be opened: %w", fileOrString, err)
	}
	// Python's unicode_escape also turns each byte of a non-ASCII UTF-8
	// character into its own Latin-1 character; vLLM inherits that.
	literal, err := decodeEscapes(fileOrString, true)
	if err != nil {
		return nil, fmt.Errorf("chat template: %w", err)
	}
	return Parse(literal)
}

// Source returns the template text as given to Parse.
func (t *Template) Source() string { return t.source }

// Input is one render's data, as received from the API.
type Input struct {
	// Messages is the JSON array of message objects.
	Messages json.RawMessage
	// Tools is a JSON array of tool definitions, or nil (the template sees
	// None).
	Tools json.RawMessage
	// Documents is a JSON array of documents for retrieval-augmented
	// templates, or nil (the template sees None).
	Documents json.RawMessage
	// AddGenerationPrompt asks the template to open an assistant turn.
	AddGenerationPrompt bool
	// ContinueFinalMessage leaves the final (assistant) message open so the
	// model continues it instead of starting a new turn.
	ContinueFinalMessage bool
	// Kwargs are chat_template_kwargs, each a top-level template variable
	// (e.g. Qwen3's enable_thinking). They may override bos_token and
	// eos_token but not the variables above.
	Kwargs map[string]json.RawMessage
	// BOSToken and EOSToken are the tokenizer's special tokens.
	BOSToken, EOSToken string
	// ContentFormat reshapes message content first, as vLLM does; the zero
	// value passes it as received (transformers). vLLM's default "auto" is
	// ContentFormat: tmpl.DetectContentFormat().
	ContentFormat ContentFormat
}

// reservedVariables are set by Render itself; transformers passes them as
// keyword arguments, so a kwarg with the same name is a Python TypeError.
var reservedVariables = map[string]bool{
	"messages": true, "tools": true, "documents": true, "add_generation_prompt": true,
}

// Render renders the template for in. Errors: *RaiseError when the
// template called raise_exception, an error matching ErrBadInput when the
// input itself is unusable, other errors when rendering failed.
func (t *Template) Render(in Input) (string, error) {
	vars, err := t.variables(in)
	if err != nil {
		return "", err
	}
	var continued *continuation
	if in.ContinueFinalMessage {
		if continued, err = t.markFinalMessage(vars["messages"]); err != nil {
			return "", err
		}
	}
	text, err := t.renderEngine(vars)
	if err != nil {
		var raised *RaiseError
		if errors.As(err, &raised) {
			return "", raised
		}
		return "", fmt.Errorf("render chat template: %w", err)
	}
	if continued != nil {
		return continued.cut(text)
	}
	return text, nil
}

// ErrEngine marks a failure inside the Jinja engine itself (a panic it
// raised on an input Jinja2 would have handled); the message says where.
var ErrEngine = errors.New("chat template engine failed")

// renderEngine runs the engine, turning a panic into ErrEngine: one odd
// template expression must not take the server down.
func (t *Template) renderEngine(vars map[string]jinja.Value) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrEngine, r)
		}
	}()
	return t.engine.RenderValues(vars)
}

// variables builds the render's variables from in.
func (t *Template) variables(in Input) (map[string]jinja.Value, error) {
	if in.ContinueFinalMessage && in.AddGenerationPrompt {
		return nil, ErrIncompatibleFlags
	}
	vars := make(map[string]jinja.Value, len(builtinVariables)+8+len(in.Kwargs))
	// A kwarg may shadow raise_exception, strftime_now and the special
	// tokens, as in transformers; this package's own functions are set
	// after the kwargs, so no request can replace them.
	vars["raise_exception"] = raiseExceptionFunc
	vars["strftime_now"] = strftimeNowFunc(t.now)
	vars["bos_token"] = jinja.NewString(in.BOSToken)
	vars["eos_token"] = jinja.NewString(in.EOSToken)
	defer func() {
		for name, fn := range builtinVariables {
			vars[name] = fn
		}
	}()
	for name, raw := range in.Kwargs {
		if reservedVariables[name] {
			return nil, fmt.Errorf("%w: chat_template_kwargs may not set %q", ErrBadInput, name)
		}
		val, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: chat_template_kwargs[%q]: %v", ErrBadInput, name, err)
		}
		vars[name] = val
	}
	messages, err := decodeJSON(in.Messages)
	if err != nil {
		return nil, fmt.Errorf("%w: messages: %v", ErrBadInput, err)
	}
	if !messages.IsList() {
		return nil, fmt.Errorf("%w: messages must be a JSON array", ErrBadInput)
	}
	applyContentFormat(messages, in.ContentFormat)
	vars["messages"] = messages
	for _, optional := range []struct {
		name string
		raw  json.RawMessage
	}{{"tools", in.Tools}, {"documents", in.Documents}} {
		val := jinja.None()
		if len(optional.raw) > 0 {
			if val, err = decodeJSON(optional.raw); err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrBadInput, optional.name, err)
			}
			if !val.IsList() && !val.IsNone() {
				return nil, fmt.Errorf("%w: %s must be a JSON array", ErrBadInput, optional.name)
			}
		}
		vars[optional.name] = val
	}
	vars["add_generation_prompt"] = jinja.NewBool(in.AddGenerationPrompt)
	return vars, nil
}

// continueTag is appended to the final message's text so the rendered
// prompt can be cut right where that text ends. The trailing space tells a
// template that keeps the text as is from one that strips it.
const continueTag = "CONTINUE_FINAL_MESSAGE_TAG "

// continuation remembers the final message's text for cut.
type continuation struct{ finalText string }

// markFinalMessage appends continueTag to the final message's text (its
// last text part when the content is a list), as transformers does.
func (t *Template) markFinalMessage(messages jinja.Value) (*continuation, error) {
	items := messages.AsList().Items
	if len(items) == 0 {
		return nil, fmt.Errorf("%w: continue_final_message is set but there are no messages", ErrBadInput)
	}
	last := items[len(items)-1]
	if !last.IsDict() {
		return nil, fmt.Errorf("%w: the final message is not an object", ErrBadInput)
	}
	final := last.AsDict()
	if role, _ := final.Get("role"); !role.IsString() || role.AsString() != "assistant" {
		return nil, ErrContinueNotAssistant
	}
	content, ok := final.Get("content")
	if !ok || content.IsNone() {
		return nil, fmt.Errorf("%w: continue_final_message is set but the final message has no \"content\" to continue!", ErrBadInput)
	}
	if !strings.Contains(t.source, "content") {
		return nil, fmt.Errorf("%w: continue_final_message is set to \"content\" but this is not an accepted field in the chat_template", ErrBadInput)
	}
	switch {
	case content.IsString():
		final.Set("content", jinja.NewString(content.AsString()+continueTag))
		return &continuation{finalText: content.AsString()}, nil
	case content.IsList():
		parts := content.AsList().Items
		for i := len(parts) - 1; i >= 0; i-- {
			if !parts[i].IsDict() {
				continue
			}
			if text, ok := parts[i].AsDict().Get("text"); ok {
				// Python's "+" needs a string here too.
				if !text.IsString() {
					return nil, fmt.Errorf("%w: the final message's text part is not a string", ErrBadInput)
				}
				parts[i].AsDict().Set("text", jinja.NewString(text.AsString()+continueTag))
				return &continuation{finalText: text.AsString()}, nil
			}
		}
		return nil, fmt.Errorf("%w: continue_final_message is set but we could not find any text to continue in the final message!", ErrBadInput)
	}
	return nil, fmt.Errorf("%w: the final message's content is neither text nor a list of parts", ErrBadInput)
}

// cut ends the rendered prompt where the final message's text ends.
func (c *continuation) cut(rendered string) (string, error) {
	tag := strings.TrimSpace(continueTag)
	if !strings.Contains(rendered, strings.TrimFunc(c.finalText, isPythonSpace)) || !strings.Contains(rendered, tag) {
		return "", ErrContinueLost
	}
	at := strings.LastIndex(rendered, tag)
	if strings.HasPrefix(rendered[at:], continueTag) {
		return rendered[:at], nil
	}
	// The template stripped the text's trailing space (and the tag's).
	return strings.TrimRightFunc(rendered[:at], isPythonSpace), nil
}
