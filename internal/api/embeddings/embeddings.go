// Package embeddings is POST /v1/embeddings: its body reader and the seeded
// embedding basis the vectors come from.
package embeddings

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strconv"
	"sync"

	"github.com/mocker-server/mocker-server/internal/api/input"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// EmbeddingsSurface is POST /v1/embeddings (vLLM's pooling "embed" task):
// every input is a prefill-only engine sequence (no output token), so it
// queues, costs prefill time, fills and reuses the prefix cache, and shows
// in metrics and KV events like any prompt. The vector is computed from the
// input's token ids once the engine has finished the sequence.
type EmbeddingsSurface struct {
	Basis *EmbedBasis
}

// embedFormat is the encoding_format of an embeddings request.
type embedFormat uint8

const (
	embedFloat  embedFormat = iota // JSON array of numbers
	embedBase64                    // base64 of little-endian float32s
)

// embedRequest holds what only embeddings requests carry.
type embedRequest struct {
	format embedFormat
	dims   int // vector length (≤ --embedding-dim)
}

var embeddingFields = wire.SetOf("model", "input", "encoding_format", "dimensions", "user",
	"truncate_prompt_tokens", "request_id", "priority", "add_special_tokens", "cache_salt",
	"messages", "add_generation_prompt", "continue_final_message", "chat_template", "chat_template_kwargs", "tools")

func (EmbeddingsSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	g := &pipeline.GenRequest{Chat: false, Rank: -1, N: 1, Ext: &embedRequest{dims: s.Opts().EmbeddingDim}}
	s.LogUnknownFields(o, r, embeddingFields)
	model, hasModel := o.String("model")
	format, hasFormat := o.String("encoding_format")
	dims := o.Int("dimensions")
	truncate := o.Int("truncate_prompt_tokens")
	priority := o.Int("priority")
	addSpecial := o.Bool("add_special_tokens", true)
	cacheSalt, hasSalt := o.String("cache_salt")
	bodyID, _ := o.String("request_id")
	o.Kind("user", "string")
	if e := checkInputCount(s, o); e != nil {
		return nil, e
	}
	chatForm := !o.Has("input") && o.Has("messages")
	var inputs []input.RawPrompt
	var empty bool
	var badID string
	if !chatForm {
		// The completions prompt forms: a string, strings, ids, id arrays.
		inputs, empty, badID = input.ParsePrompt(o, "input", s.Tokenizer().VocabSize())
	}
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if e := s.ResolveModel(g, model, hasModel); e != nil {
		return nil, e
	}
	g.BaseID = input.RequestID(r.Header.Get("X-Request-Id"), bodyID)
	if chatForm {
		// vLLM's chat form (EmbeddingChatRequest): one input, the
		// rendered conversation.
		ids, e := s.PoolingChatIDs(o)
		if e != nil {
			return nil, e
		}
		inputs = []input.RawPrompt{{IDs: ids}}
	}
	switch {
	case len(inputs) == 0 || empty:
		return nil, wire.ErrInvalid("input", "input must not be empty")
	case badID != "":
		return nil, wire.ErrInvalid("input", "Token id %s is out of vocabulary", badID)
	}
	if hasFormat {
		switch format {
		case "float":
		case "base64":
			embedReq(g).format = embedBase64
		default:
			return nil, wire.ErrInvalid("encoding_format", "encoding_format must be 'float' or 'base64', got '%s'", format)
		}
	}
	if dims.Set {
		if dims.I < 1 || dims.I > int64(s.Opts().EmbeddingDim) {
			return nil, wire.ErrInvalid("dimensions", "dimensions must be between 1 and %d, got %s.", s.Opts().EmbeddingDim, dims)
		}
		embedReq(g).dims = int(dims.I)
	}
	var e *wire.APIError
	if g.Truncate, e = s.CheckTruncate(truncate); e != nil {
		return nil, e
	}
	if e := s.SetPriority(g, priority); e != nil {
		return nil, e
	}
	if g.CacheSalt, e = pipeline.CheckCacheSalt(cacheSalt, hasSalt); e != nil {
		return nil, e
	}
	if g.Rank, e = s.HeaderRank(r); e != nil {
		return nil, e
	}
	return g, embedPrompts(s, g, inputs, addSpecial)
}

// TokenRequest builds the embeddings request of one token-id input for a
// front end that is not HTTP (gRPC's Embed), with /v1/embeddings' checks of
// such an input: not empty, in the vocabulary, within the context and the
// KV capacity. Its vectors have --embedding-dim components; Vector computes
// them once the engine has run the request.
func TokenRequest(s *pipeline.Server, m pipeline.Meta, ids []uint32, bodyID string) (*pipeline.GenRequest, *wire.APIError) {
	g := &pipeline.GenRequest{Rank: -1, N: 1, Ext: &embedRequest{dims: s.Opts().EmbeddingDim}}
	if e := s.ResolveModel(g, "", false); e != nil {
		return nil, e
	}
	g.BaseID = input.RequestID(m.RequestID, bodyID)
	if len(ids) == 0 {
		return nil, wire.ErrInvalid("input", "input must not be empty")
	}
	vocab := s.Tokenizer().VocabSize()
	for _, id := range ids {
		if int64(id) >= int64(vocab) {
			return nil, wire.ErrInvalid("input", "Token id %d is out of vocabulary", id)
		}
	}
	var e *wire.APIError
	if g.Rank, e = s.RankOf(m.Rank); e != nil {
		return nil, e
	}
	return g, embedPrompts(s, g, []input.RawPrompt{{IDs: ids}}, true)
}

// Vector is the embedding of a request's prompt i: the vector
// /v1/embeddings answers for the same ids with the same seed and
// --embedding-dim.
func (es EmbeddingsSurface) Vector(g *pipeline.GenRequest, i int) []float32 {
	dims := embedReq(g).dims
	return es.Basis.Embed(make([]float32, dims), g.Prompts[i].IDs, dims)
}

// checkInputCount applies --max-embedding-inputs (OpenAI caps the list at
// 2,048: each input is an engine sequence and a vector in the answer) from
// the list's length alone, before any item is read, so 100,000 inputs cost
// one scan of the body.
func checkInputCount(s *pipeline.Server, o wire.Object) *wire.APIError {
	limit := s.Opts().Budgets.MaxEmbeddingInputs
	raw, ok := o.Raw("input")
	if limit <= 0 || !ok || raw[0] != '[' {
		return nil
	}
	if n := wire.CountArray(raw); n > limit {
		return wire.ErrInvalid("input", "input has %d items, more than the limit of %d (--max-embedding-inputs).", n, limit)
	}
	return nil
}

// embedPrompts tokenizes the inputs of an embeddings request and applies
// truncation, the context length and the KV capacity check.
func embedPrompts(s *pipeline.Server, g *pipeline.GenRequest, inputs []input.RawPrompt, addSpecial bool) *wire.APIError {
	N := s.Opts().Model.MaxModelLen
	g.Prompts = make([]pipeline.PromptSpec, len(inputs))
	for i, in := range inputs {
		ids := in.IDs
		if in.IsText {
			ids = s.Tokenizer().Encode(in.Text, addSpecial)
		}
		if len(ids) == 0 {
			return wire.ErrInvalid("input", "input must not be empty")
		}
		if g.Truncate > 0 && len(ids) > g.Truncate {
			ids = ids[len(ids)-g.Truncate:]
		}
		if len(ids) > N {
			return wire.ErrInvalid("input", "This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", N, len(ids))
		}
		if rej := s.Engines()[0].CheckAdmissible(len(ids), 0); rej != nil {
			return wire.ErrInvalid("", "%s", rej.Message)
		}
		// m = 0: the engine prefills the prompt and finishes the sequence
		// without a token.
		g.Prompts[i] = pipeline.PromptSpec{IDs: ids, IsText: in.IsText}
	}
	return nil
}

func (EmbeddingsSurface) Encoder(*pipeline.Job) pipeline.EventEncoder { return nil }

func (es EmbeddingsSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	g := j.G
	p := 0
	for i := range g.Prompts {
		p += len(g.Prompts[i].IDs)
	}
	vec := make([]float32, j.S.Opts().EmbeddingDim)
	b := make([]byte, 0, 256+len(g.Prompts)*(embedReq(g).dims*22+64))
	b = AppendListHead(b, "embd-", g)
	for i := range g.Prompts {
		if i > 0 {
			b = append(b, ',')
		}
		v := es.Basis.Embed(vec, g.Prompts[i].IDs, embedReq(g).dims)
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"embedding","embedding":`...)
		if embedReq(g).format == embedBase64 {
			b = AppendBase64(b, v)
		} else {
			b = AppendFloats(b, v)
		}
		b = append(b, '}')
	}
	b = append(b, `],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"completion_tokens":0,"prompt_tokens_details":null}}`...)
	httperr.Write(w, http.StatusOK, b)
}

// EmbedBasis is a table of pseudo-random dense vectors that token
// positions draw from: an embedding is the normalised sum of one signed
// basis vector per position, chosen by a chain hash of the tokens up to
// that position. The same input always gives the same vector, and two
// inputs sharing a k-token prefix share k contributions, so their cosine
// similarity is about k/√(n₁·n₂) (the signed vectors are nearly
// orthogonal). A position costs one vector addition instead of a fresh
// random vector.
type EmbedBasis struct {
	seed uint64
	dim  int
	once sync.Once
	vecs []float32 // count × dim, row-major
	mask uint64    // count − 1 (count is a power of two)
}

// embedBasisBytes bounds the table's memory.
const embedBasisBytes = 4 << 20

// embedSignBlock is how many consecutive components share one sign bit.
const embedSignBlock = 32

// NewEmbedBasis returns the basis of a seed and vector length; its table is
// built on first use. The embeddings and pooling surfaces share one, so a
// score is computed from the very vectors /v1/embeddings returns.
func NewEmbedBasis(seed int64, dim int) *EmbedBasis {
	return &EmbedBasis{seed: uint64(seed), dim: dim}
}

// Table returns the basis vectors (count × dim, row-major), built once.
func (eb *EmbedBasis) Table() []float32 {
	eb.once.Do(func() {
		count := 1024
		for count > 16 && count*eb.dim*4 > embedBasisBytes {
			count /= 2
		}
		eb.mask = uint64(count - 1)
		eb.vecs = make([]float32, count*eb.dim)
		x := plan.Mix64(eb.seed ^ 0x656d6265645f7631) // "embed_v1"
		for i := range eb.vecs {
			x += plan.Phi
			// Top 24 bits → [-1, 1).
			eb.vecs[i] = float32(plan.Mix64(x)>>40)*(2.0/(1<<24)) - 1
		}
	})
	return eb.vecs
}

// Embed computes the embedding of a token sequence into dst (full length)
// and returns its first dims components, scaled to unit norm. Truncating
// to dims and renormalising is what a Matryoshka-trained model's
// `dimensions` does.
func (eb *EmbedBasis) Embed(dst []float32, ids []uint32, dims int) []float32 {
	vecs := eb.Table()
	acc := dst[:dims]
	clear(acc)
	h := plan.Mix64(eb.seed ^ 0x636861696e5f7631) // "chain_v1"
	for _, id := range ids {
		h = plan.Mix64(h ^ (uint64(id)+1)*plan.Phi)
		row := vecs[int(h&eb.mask)*eb.dim:][:dims]
		signs := plan.Mix64(h + plan.Phi)
		for start, block := 0, 0; start < dims; start, block = start+embedSignBlock, block+1 {
			if block > 0 && block%64 == 0 {
				signs = plan.Mix64(signs + plan.Phi)
			}
			end := min(start+embedSignBlock, dims)
			if signs>>(block%64)&1 == 0 {
				for k := start; k < end; k++ {
					acc[k] += row[k]
				}
			} else {
				for k := start; k < end; k++ {
					acc[k] -= row[k]
				}
			}
		}
	}
	var norm float64
	for _, a := range acc {
		norm += float64(a) * float64(a)
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return acc
	}
	for k, a := range acc {
		acc[k] = float32(float64(a) / norm)
	}
	return acc
}

// AppendListHead appends the head of a list response of g (vLLM's
// embedding, pooling, classification and score responses share it) up to
// and including the opening bracket of "data": the id is idPrefix followed
// by g's BaseID (idPrefix is a constant of the caller's, written as is).
func AppendListHead(b []byte, idPrefix string, g *pipeline.GenRequest) []byte {
	b = append(b, `{"id":"`...)
	b = append(b, idPrefix...)
	b = jsonenc.AppendStringContent(b, g.BaseID)
	b = append(b, `","object":"list","created":`...)
	b = strconv.AppendInt(b, g.Created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, g.Model)
	return append(b, `,"data":[`...)
}

// AppendFloats appends v as a JSON array the way vLLM writes it
// (Python's repr of each float32 widened to a double).
func AppendFloats(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		d := float64(f)
		if a := math.Abs(d); a >= 1e-4 && a < 1 {
			// Fixed notation with a fraction: the same text as repr.
			b = strconv.AppendFloat(b, d, 'f', -1, 64)
			continue
		}
		b = append(b, pyrepr.Float(d)...)
	}
	return append(b, ']')
}

// AppendBase64 appends v as a JSON string: base64 of the
// little-endian float32 bytes (what vLLM and OpenAI send, and what the
// OpenAI SDKs decode into a Float32Array / []float32).
func AppendBase64(b []byte, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

// embedReq is the embeddings request a generation request carries.
func embedReq(g *pipeline.GenRequest) *embedRequest { return g.Ext.(*embedRequest) }
