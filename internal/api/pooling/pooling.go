// Package pooling is the endpoints of a pooling model (docs/pooling.md):
// /score and /v1/score, /rerank, /v1/rerank and /v2/rerank, /classify and
// /pooling, in vLLM's request and response shapes. Every input is a
// prefill-only engine sequence, as /v1/embeddings' are: it queues, costs
// prefill time, fills and hits the prefix cache and shows in the metrics and
// KV events. Scores and class probabilities are computed, once the engine
// has finished the sequences, from the same seeded vectors /v1/embeddings
// returns (embeddings.EmbedBasis), so they agree with the embeddings.
package pooling

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
)

// common holds the fields every pooling request shares.
type common struct {
	useActivation *bool // use_activation (or its deprecated names); nil = the pooler's default (true)
	addSpecial    bool
	keepFirst     bool // truncation_side "right": truncation keeps the first tokens
}

// activation reports whether the classifier's activation applies.
func (c *common) activation() bool { return c.useActivation == nil || *c.useActivation }

// commonFields are the fields of vLLM's PoolingBasicRequestMixin and
// ClassifyRequestMixin, plus the deprecated activation names 0.17 still
// reads.
var commonFields = []string{"model", "user", "truncate_prompt_tokens", "truncation_side", "padding",
	"request_id", "priority", "mm_processor_kwargs", "cache_salt", "use_activation", "softmax", "activation",
	"add_special_tokens", "add_generation_prompt", "continue_final_message", "chat_template",
	"chat_template_kwargs", "tools", "media_io_kwargs"}

// fieldSet is commonFields and a surface's own fields.
func fieldSet(own ...string) map[string]bool { return wire.SetOf(append(own, commonFields...)...) }

// newRequest reads the shared fields into a prefill-only request: model
// (404 for an unknown one), request id, truncation and its side, priority,
// cache salt, the DP-rank header and use_activation. Unknown fields (not
// in known) are logged and ignored, as vLLM ignores them.
func newRequest(s *pipeline.Server, o wire.Object, r *http.Request, known map[string]bool) (*pipeline.GenRequest, common, *wire.APIError) {
	g := &pipeline.GenRequest{Chat: false, Rank: -1, N: 1}
	var c common
	s.LogUnknownFields(o, r, known)
	model, hasModel := o.String("model")
	truncate := o.Int("truncate_prompt_tokens")
	priority := o.Int("priority")
	cacheSalt, hasSalt := o.String("cache_salt")
	bodyID, _ := o.String("request_id")
	c.addSpecial = o.Bool("add_special_tokens", true)
	o.Kind("user", "string")
	if side, ok := o.String("truncation_side"); ok {
		if side != "left" && side != "right" {
			return nil, c, wire.ErrInvalid("truncation_side", "truncation_side must be 'left' or 'right', got '%s'", side)
		}
		c.keepFirst = side == "right"
	}
	for _, name := range []string{"softmax", "activation", "use_activation"} {
		// use_activation wins over the deprecated names (vLLM's
		// get_use_activation reads them in this order).
		if raw, ok := o.Raw(name); ok && string(raw) != "null" {
			v := o.Bool(name, true)
			c.useActivation = &v
		}
	}
	if e := o.Failed(); e != nil {
		return nil, c, e
	}
	if e := s.ResolveModel(g, model, hasModel); e != nil {
		return nil, c, e
	}
	g.BaseID = input.RequestID(r.Header.Get("X-Request-Id"), bodyID)
	var e *wire.APIError
	if g.Truncate, e = s.CheckTruncate(truncate); e != nil {
		return nil, c, e
	}
	if e := s.SetPriority(g, priority); e != nil {
		return nil, c, e
	}
	if g.CacheSalt, e = pipeline.CheckCacheSalt(cacheSalt, hasSalt); e != nil {
		return nil, c, e
	}
	if g.Rank, e = s.HeaderRank(r); e != nil {
		return nil, c, e
	}
	return g, c, nil
}

// checkCount applies --max-embedding-inputs to a list field from its
// length alone, before any item is read: 10,000 documents cost one scan of
// the body and a 400, not 10,000 sequences.
func checkCount(s *pipeline.Server, o wire.Object, key string) *wire.APIError {
	limit := s.Opts().Budgets.MaxEmbeddingInputs
	raw, ok := o.Raw(key)
	if limit <= 0 || !ok || len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	if n := wire.CountArray(raw); n > limit {
		return wire.ErrInvalid(key, "%s has %d items, more than the limit of %d (--max-embedding-inputs).", key, n, limit)
	}
	return nil
}

// addPrompt appends one engine sequence of ids to g after truncation (the
// last truncate_prompt_tokens tokens, the first with truncation_side
// "right") and the context-length and KV-capacity checks; what names the
// input in the context-length message ("scoring", "classification", …).
func (c *common) addPrompt(s *pipeline.Server, g *pipeline.GenRequest, ids []uint32, isText bool, param, what string) *wire.APIError {
	if len(ids) == 0 {
		return wire.ErrInvalid(param, "%s must not be empty", param)
	}
	if g.Truncate > 0 && len(ids) > g.Truncate {
		if c.keepFirst {
			ids = ids[:g.Truncate]
		} else {
			ids = ids[len(ids)-g.Truncate:]
		}
	}
	if N := s.Opts().Model.MaxModelLen; len(ids) > N {
		return wire.ErrInvalid(param, "This model's maximum context length is %d tokens. However, you requested %d tokens in the input for %s. Please reduce the length of the input.", N, len(ids), what)
	}
	if rej := s.Engines()[0].CheckAdmissible(len(ids), 0); rej != nil {
		return wire.ErrInvalid("", "%s", rej.Message)
	}
	// M = 0: the engine prefills and finishes the sequence without a token.
	g.Prompts = append(g.Prompts, pipeline.PromptSpec{IDs: ids, IsText: isText})
	return nil
}

// promptTokens is the usage count of a request: every sequence's tokens.
func promptTokens(g *pipeline.GenRequest) int {
	n := 0
	for i := range g.Prompts {
		n += len(g.Prompts[i].IDs)
	}
	return n
}

// parseInputs reads the input of /classify and /pooling into engine
// sequences: the completion form (input: a string, strings, ids or id
// arrays, one sequence each) or the chat form (messages, one sequence).
func parseInputs(s *pipeline.Server, o wire.Object, g *pipeline.GenRequest, c common, what string) *wire.APIError {
	if o.Has("messages") && !o.Has("input") {
		// The chat form: one sequence, the rendered conversation.
		ids, e := s.PoolingChatIDs(o)
		if e != nil {
			return e
		}
		return c.addPrompt(s, g, ids, true, "messages", what)
	}
	if e := checkCount(s, o, "input"); e != nil {
		return e
	}
	inputs, empty, badID := input.ParsePrompt(o, "input", s.Tokenizer().VocabSize())
	if e := o.Failed(); e != nil {
		return e
	}
	switch {
	case !o.Has("input"):
		return wire.ErrFieldRequired("input")
	case len(inputs) == 0 || empty:
		return wire.ErrInvalid("input", "input must not be empty")
	case badID != "":
		return wire.ErrInvalid("input", "Token id %s is out of vocabulary", badID)
	}
	for _, in := range inputs {
		ids := in.IDs
		if in.IsText {
			ids = s.Tokenizer().Encode(in.Text, c.addSpecial)
		}
		if e := c.addPrompt(s, g, ids, in.IsText, "input", what); e != nil {
			return e
		}
	}
	return nil
}

// head is the stand-in classifier: a fixed linear head over the input's
// embedding. Logit k is √dim times component k of the embedding (the sign
// flipped on each wrap past dim), so over random inputs each logit is about
// a standard normal, and the same input always gets the same logits.
type head struct {
	basis *embeddings.EmbedBasis
	dim   int
}

// logits writes the n logits of ids into dst (len n); vec is scratch of
// length dim.
func (h head) logits(dst, vec []float32, ids []uint32) {
	e := h.basis.Embed(vec, ids, h.dim)
	scale := math.Sqrt(float64(h.dim))
	for k := range dst {
		v := float64(e[k%h.dim]) * scale
		if (k/h.dim)%2 == 1 {
			v = -v
		}
		dst[k] = float32(v)
	}
}

// activate applies a classifier's activation in place: softmax over
// several labels, the sigmoid for one (vLLM's default pooler activations).
func activate(v []float32) {
	if len(v) == 1 {
		v[0] = float32(sigmoid(float64(v[0])))
		return
	}
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, float64(x))
	}
	var sum float64
	for i, x := range v {
		e := math.Exp(float64(x) - m)
		v[i] = float32(e)
		sum += e
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / sum)
	}
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// rawKind is the JSON kind of a raw value's first byte.
func rawKind(raw json.RawMessage) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}
