package mmproc

import (
	"fmt"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/media"
)

// The encoder passes as operators (engine.EncoderWork): the same towers
// and positions encoderFLOPs counts, kept as shapes so the hardware model
// can price each GEMM at its own width and the attention at its own
// sequence length. The FLOPs of a work equal encoderFLOPs' count
// (TestEncoderWorkMatchesFLOPs).

// work is the tower's layers over rows positions, attending over seqLen
// at a time, followed by gemms.
func (v vit) work(rows, seqLen int, gemms ...[3]int) *engine.EncoderWork {
	w := &engine.EncoderWork{Rows: rows, SeqLen: seqLen, Layers: v.layers, Hidden: v.hidden, MLP: v.inter,
		HeadDim: v.headDim, GatedMLP: v.gated, GEMMs: gemms}
	if v.window > 0 {
		w.Window, w.FullLayers = v.window, v.fullLayers
	}
	return w
}

// patchEmbed is the patch embedding of p patches as a GEMM.
func (v vit) patchEmbed(p int) [3]int { return [3]int{p, v.hidden, v.patchIn} }

// merger is the merger MLP over p patches merged mergeRatio to a token.
func (v vit) merger(p, mergeRatio int) [][3]int {
	if mergeRatio <= 0 || v.mergeIn <= 0 {
		return nil
	}
	tok := p / mergeRatio
	return [][3]int{{tok, v.mergeIn, v.mergeIn}, {tok, v.out, v.mergeIn}}
}

func (q *qwenVL) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	t, h, w, err := q.grid(it)
	if err != nil {
		return nil, err
	}
	// Each temporal patch of a video is its own attention sequence (the
	// tower's cu_seqlens); an image is one.
	p := t * h * w
	return q.enc.work(p, h*w, append([][3]int{q.enc.patchEmbed(p)}, q.enc.merger(p, q.merge*q.merge)...)...), nil
}

func (g *gemma3) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	// The image and each pan-and-scan crop: a sequence of its own.
	n := 1 + g.pan.crops(it.Width, it.Height)
	return g.enc.work(n*g.patches, g.patches, g.enc.patchEmbed(n*g.patches), [3]int{n * g.tokens, g.out, g.enc.hidden}), nil
}

func (l *llava) encoderWork(media.Item) (*engine.EncoderWork, error) {
	p := l.positions // the patches and CLS
	return l.enc.work(p, p, l.enc.patchEmbed(p-1), [3]int{l.tokens, l.out, l.enc.hidden}, [3]int{l.tokens, l.out, l.out}), nil
}

func (l *llama4) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return nil, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := l.tiles(it.Width, it.Height)
	n := rows * cols
	if n > 1 {
		n++ // the global tile
	}
	patches := l.perTile * 4
	// Every tile is its own sequence: its patches and CLS.
	return l.enc.work(n*(patches+1), patches+1, l.enc.patchEmbed(n*patches),
		[3]int{n * l.perTile, l.out, 4 * l.enc.hidden}, [3]int{n * l.perTile, l.out, l.out}), nil
}

func (p *pixtral) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Width <= 0 || it.Height <= 0 {
		return nil, fmt.Errorf("%w: image without a size", ErrBadItem)
	}
	rows, cols := p.grid(it.Width, it.Height)
	mm := p.merge * p.merge
	n := rows * cols * mm
	return p.enc.work(n, n, append([][3]int{p.enc.patchEmbed(n)}, p.enc.merger(n, mm)...)...), nil
}

func (q *qwen2Audio) encoderWork(it media.Item) (*engine.EncoderWork, error) {
	if it.Duration <= 0 {
		return nil, fmt.Errorf("%w: audio without a duration", ErrBadItem)
	}
	// The padded 30-s window: the two convolutions as GEMMs (kernel 3),
	// the layers, then the projection of the pooled half.
	p, d := q.positions, q.enc.hidden
	return q.enc.work(p, p, [3]int{2 * p, d, 3 * q.mels}, [3]int{p, d, 3 * d}, [3]int{p / 2, q.out, d}), nil
}
