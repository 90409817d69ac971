package chattemplate

import (
	"regexp"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ContentFormat is the shape of message content handed to the template,
// vLLM's --chat-template-content-format.
type ContentFormat int

const (
	// ContentAsGiven passes content as received: a string or a list of
	// parts (what transformers does).
	ContentAsGiven ContentFormat = iota
	// ContentString joins the text of a list of parts into one string, with
	// "\n" between parts (vLLM's "string"); other parts are dropped.
	ContentString
	// ContentOpenAI turns string content into [{"type": "text", "text": …}]
	// (vLLM's "openai").
	ContentOpenAI
)

// String returns vLLM's name of the format ("string", "openai").
func (f ContentFormat) String() string {
	switch f {
	case ContentString:
		return "string"
	case ContentOpenAI:
		return "openai"
	}
	return "as-given"
}

// contentLoop matches a for loop over a message's content:
// "for part in message.content", "… in message['content']",
// "… in messages[0].content".
var contentLoop = regexp.MustCompile(`^\s*for\s+[\w\s,()]+\s+in\s+\w+(\[-?\d+\])?(\.content|\[\s*['"]content['"]\s*\])\s*(\bif\b.*|\brecursive\b)?$`)

// DetectContentFormat is vLLM's "auto" content format: a template that
// loops over a message's content expects a list of parts (ContentOpenAI),
// any other expects a string (ContentString).
func (t *Template) DetectContentFormat() ContentFormat {
	pieces, err := splitPieces(t.source)
	if err != nil {
		return ContentString
	}
	for _, p := range pieces {
		if p.kind == pieceStatement && contentLoop.MatchString(p.text) {
			return ContentOpenAI
		}
	}
	return ContentString
}

// applyContentFormat reshapes each message's content in place.
func applyContentFormat(messages jinja.Value, format ContentFormat) {
	if format == ContentAsGiven {
		return
	}
	for _, message := range messages.AsList().Items {
		if !message.IsDict() {
			continue
		}
		dict := message.AsDict()
		content, ok := dict.Get("content")
		switch {
		case !ok:
		case format == ContentString && content.IsList():
			var texts []string
			for _, part := range content.AsList().Items {
				if !part.IsDict() {
					continue
				}
				kind, _ := part.AsDict().Get("type")
				text, _ := part.AsDict().Get("text")
				if kind.IsString() && kind.AsString() == "text" && text.IsString() {
					texts = append(texts, text.AsString())
				}
			}
			dict.Set("content", jinja.NewString(strings.Join(texts, "\n")))
		case format == ContentOpenAI && content.IsString():
			part := jinja.NewDict()
			part.AsDict().Set("type", jinja.NewString("text"))
			part.AsDict().Set("text", content)
			dict.Set("content", jinja.NewList([]jinja.Value{part}))
		}
	}
}
