package pooling

import (
	"net/http"
	"strconv"

	"github.com/mocker-server/mocker-server/internal/api/embeddings"
	"github.com/mocker-server/mocker-server/internal/api/pipeline"
	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/api/wire"
	"github.com/mocker-server/mocker-server/internal/httperr"
)

// PoolingSurface is POST /pooling (vLLM's ServingPooling): the raw pooler
// output of each input for the model's task — the embedding (the vector
// /v1/embeddings returns, `dimensions` and `encoding_format` as there)
// or the class probabilities (as /classify's probs). `task` may name the
// model's own task; the per-token tasks (token_embed, token_classify) and
// plugins are refused.
type PoolingSurface struct {
	Basis *embeddings.EmbedBasis
}

// poolRequest is what only /pooling requests carry.
type poolRequest struct {
	classifyRequest
	classify bool // the classify task, else embed
	base64   bool
	dims     int
}

func poolReq(g *pipeline.GenRequest) *poolRequest { return g.Ext.(*poolRequest) }

var poolFields = fieldSet("input", "messages", "task", "encoding_format", "dimensions", "embed_dtype", "endianness")

func (PoolingSurface) Parse(s *pipeline.Server, o wire.Object, r *http.Request) (*pipeline.GenRequest, *wire.APIError) {
	g, c, e := newRequest(s, o, r, poolFields)
	if e != nil {
		return nil, e
	}
	po := s.Opts().Pooling
	pr := &poolRequest{classifyRequest: classifyRequest{common: c, labels: po.Labels()},
		classify: po.Task == settings.TaskClassify, dims: s.Opts().EmbeddingDim}
	g.Ext = pr
	own := "embed"
	if pr.classify {
		own = "classify"
	}
	task, hasTask := o.String("task")
	format, hasFormat := o.String("encoding_format")
	dims := o.Int("dimensions")
	if e := o.Failed(); e != nil {
		return nil, e
	}
	if hasTask && task != own {
		return nil, wire.ErrInvalid("task", "Task %s is not supported, it must be one of the supported tasks: ['%s']", task, own)
	}
	if hasFormat {
		switch format {
		case "float":
		case "base64":
			pr.base64 = true
		default:
			return nil, wire.ErrInvalid("encoding_format", "encoding_format must be 'float' or 'base64', got '%s'", format)
		}
	}
	if dims.Set {
		if pr.classify {
			return nil, wire.ErrInvalid("dimensions", "dimensions is only supported for embedding models")
		}
		if dims.I < 1 || dims.I > int64(pr.dims) {
			return nil, wire.ErrInvalid("dimensions", "dimensions must be between 1 and %d, got %s.", pr.dims, dims)
		}
		pr.dims = int(dims.I)
	}
	if e := parseInputs(s, o, g, c, "pooling"); e != nil {
		return nil, e
	}
	return g, nil
}

func (PoolingSurface) Encoder(*pipeline.Job) pipeline.EventEncoder { return nil }

func (ps PoolingSurface) Respond(j *pipeline.Job, w http.ResponseWriter) {
	g, pr := j.G, poolReq(j.G)
	h := head{basis: ps.Basis, dim: j.S.Opts().EmbeddingDim}
	vec, p := make([]float32, h.dim), make([]float32, pr.labels)
	b := make([]byte, 0, 192+len(g.Prompts)*(64+max(pr.dims, pr.labels)*22))
	b = embeddings.AppendListHead(b, "pool-", g)
	for i := range g.Prompts {
		if i > 0 {
			b = append(b, ',')
		}
		out := p
		if pr.classify {
			pr.probs(h, p, vec, g.Prompts[i].IDs)
		} else {
			out = ps.Basis.Embed(vec, g.Prompts[i].IDs, pr.dims)
		}
		b = append(b, `{"index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"object":"pooling","data":`...)
		if pr.base64 {
			b = embeddings.AppendBase64(b, out)
		} else {
			b = embeddings.AppendFloats(b, out)
		}
		b = append(b, '}')
	}
	b = appendUsage(b, promptTokens(g))
	httperr.Write(w, http.StatusOK, append(b, '}'))
}
