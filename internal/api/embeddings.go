package api

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/mocker-server/mocker-server/internal/httperr"
	"github.com/mocker-server/mocker-server/internal/jsonenc"
	"github.com/mocker-server/mocker-server/internal/plan"
	"github.com/mocker-server/mocker-server/internal/pyrepr"
)

// embeddingsSurface is POST /v1/embeddings (vLLM's pooling "embed" task):
// every input is a prefill-only engine sequence (no output token), so it
// queues, costs prefill time, fills and reuses the prefix cache, and shows
// in metrics and KV events like any prompt. The vector is computed from the
// input's token ids once the engine has finished the sequence.
type embeddingsSurface struct {
	basis *embedBasis
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

var embeddingFields = setOf("model", "input", "encoding_format", "dimensions", "user",
	"truncate_prompt_tokens", "request_id", "priority", "add_special_tokens", "cache_salt")

func (embeddingsSurface) parse(s *Server, o object, r *http.Request) (*genRequest, *apiError) {
	g := &genRequest{chat: false, rank: -1, n: 1, embed: &embedRequest{dims: s.opts.EmbeddingDim}}
	s.logUnknownFields(o, r, embeddingFields)
	model, hasModel := o.String("model")
	format, hasFormat := o.String("encoding_format")
	dims := o.Int("dimensions")
	truncate := o.Int("truncate_prompt_tokens")
	priority := o.Int("priority")
	addSpecial := o.Bool("add_special_tokens", true)
	cacheSalt, hasSalt := o.String("cache_salt")
	bodyID, _ := o.String("request_id")
	o.Kind("user", "string")
	// The completions prompt forms: a string, strings, ids, id arrays.
	inputs, empty, badID := parsePrompt(o, "input", s.tok.VocabSize())
	if e := o.failed(); e != nil {
		return nil, e
	}
	if e := s.resolveModel(g, model, hasModel); e != nil {
		return nil, e
	}
	g.baseID = requestID(r.Header.Get("X-Request-Id"), bodyID)
	switch {
	case len(inputs) == 0 || empty:
		return nil, errInvalid("input", "input must not be empty")
	case badID != "":
		return nil, errInvalid("input", "Token id %s is out of vocabulary", badID)
	}
	if hasFormat {
		switch format {
		case "float":
		case "base64":
			g.embed.format = embedBase64
		default:
			return nil, errInvalid("encoding_format", "encoding_format must be 'float' or 'base64', got '%s'", format)
		}
	}
	if dims.Set {
		if dims.I < 1 || dims.I > int64(s.opts.EmbeddingDim) {
			return nil, errInvalid("dimensions", "dimensions must be between 1 and %d, got %s.", s.opts.EmbeddingDim, dims)
		}
		g.embed.dims = int(dims.I)
	}
	var e *apiError
	if g.truncate, e = s.checkTruncate(truncate); e != nil {
		return nil, e
	}
	if e := s.setPriority(g, priority); e != nil {
		return nil, e
	}
	if g.cacheSalt, e = checkCacheSalt(cacheSalt, hasSalt); e != nil {
		return nil, e
	}
	if g.rank, e = s.headerRank(r); e != nil {
		return nil, e
	}
	return g, s.embedPrompts(g, inputs, addSpecial)
}

// embedPrompts tokenizes the inputs of an embeddings request and applies
// truncation, the context length and the KV capacity check.
func (s *Server) embedPrompts(g *genRequest, inputs []rawPrompt, addSpecial bool) *apiError {
	N := s.opts.Model.MaxModelLen
	g.prompts = make([]promptSpec, len(inputs))
	for i, in := range inputs {
		ids := in.ids
		if in.isText {
			ids = s.tok.Encode(in.text, addSpecial)
		}
		if len(ids) == 0 {
			return errInvalid("input", "input must not be empty")
		}
		if g.truncate > 0 && len(ids) > g.truncate {
			ids = ids[len(ids)-g.truncate:]
		}
		if len(ids) > N {
			return errInvalid("input", "This model's maximum context length is %d tokens. However, you requested %d tokens in the input for embedding generation. Please reduce the length of the input.", N, len(ids))
		}
		if rej := s.engines[0].CheckAdmissible(len(ids), 0); rej != nil {
			return errInvalid("", "%s", rej.Message)
		}
		// m = 0: the engine prefills the prompt and finishes the sequence
		// without a token.
		g.prompts[i] = promptSpec{ids: ids, isText: in.isText}
	}
	return nil
}

// logUnknownFields logs, at debug level, the body fields an endpoint does
// not know (they are ignored, as vLLM ignores extra fields).
func (s *Server) logUnknownFields(o object, r *http.Request, known map[string]bool) {
	if unknown := o.unknownKeys(known); len(unknown) > 0 {
		slices.Sort(unknown)
		s.log.Debug("ignoring unknown request fields", "path", r.URL.Path, "fields", unknown)
	}
}

func (embeddingsSurface) encoder(*job) eventEncoder { return nil }

func (es embeddingsSurface) respond(j *job, w http.ResponseWriter) {
	g := j.g
	p := 0
	for i := range g.prompts {
		p += len(g.prompts[i].ids)
	}
	vec := make([]float32, j.s.opts.EmbeddingDim)
	b := make([]byte, 0, 256+len(g.prompts)*(g.embed.dims*22+64))
	b = append(b, `{"id":"embd-`...)
	b = jsonenc.AppendStringContent(b, g.baseID)
	b = append(b, `","object":"list","created":`...)
	b = strconv.AppendInt(b, g.created, 10)
	b = append(b, `,"model":`...)
	b = jsonenc.AppendString(b, g.model)
	b = append(b, `,"data":[`...)
	for i := range g.prompts {
		if i > 0 {
			b = append(b, ',')
		}
		v := es.basis.embed(vec, g.prompts[i].ids, g.embed.dims)
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"embedding","embedding":`...)
		if g.embed.format == embedBase64 {
			b = appendEmbeddingBase64(b, v)
		} else {
			b = appendEmbeddingFloats(b, v)
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

// embedBasis is a table of pseudo-random dense vectors that token
// positions draw from: an embedding is the normalised sum of one signed
// basis vector per position, chosen by a chain hash of the tokens up to
// that position. The same input always gives the same vector, and two
// inputs sharing a k-token prefix share k contributions, so their cosine
// similarity is about k/√(n₁·n₂) (the signed vectors are nearly
// orthogonal). A position costs one vector addition instead of a fresh
// random vector.
type embedBasis struct {
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

func newEmbedBasis(seed int64, dim int) *embedBasis {
	return &embedBasis{seed: uint64(seed), dim: dim}
}

func (eb *embedBasis) table() []float32 {
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

// embed computes the embedding of a token sequence into dst (full length)
// and returns its first dims components, scaled to unit norm. Truncating
// to dims and renormalising is what a Matryoshka-trained model's
// `dimensions` does.
func (eb *embedBasis) embed(dst []float32, ids []uint32, dims int) []float32 {
	vecs := eb.table()
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

// appendEmbeddingFloats appends v as a JSON array the way vLLM writes it
// (Python's repr of each float32 widened to a double).
func appendEmbeddingFloats(b []byte, v []float32) []byte {
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

// appendEmbeddingBase64 appends v as a JSON string: base64 of the
// little-endian float32 bytes (what vLLM and OpenAI send, and what the
// OpenAI SDKs decode into a Float32Array / []float32).
func appendEmbeddingBase64(b []byte, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(f))
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}
