package mmproc

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/mocker-server/mocker-server/internal/media"
)

// kwargsRules is a family whose counts a request's mm_processor_kwargs
// can change.
type kwargsRules interface {
	withKwargs(kw map[string]any) (rules, error)
}

// WithKwargs returns the processor as mm_processor_kwargs
// (media.FieldsFromJSON) configure it: fs merged over the kwargs the
// receiver already has (a request's over the server's --mm-processor-kwargs,
// as vLLM's MultiModalConfig.merge_mm_processor_kwargs does: a top-level
// key of fs replaces the receiver's whole value) and applied to the
// processor as loaded. What the kwargs change: Qwen's min_pixels and
// max_pixels (flat or under images_kwargs, or size.shortest_edge/
// longest_edge), Qwen3-VL's video fps, InternVL's dynamic patch bounds, Gemma 3's
// do_pan_and_scan and its pan_and_scan_* settings. Keys a family does
// not take are dropped, as vLLM drops kwargs its processor does not
// accept. The receiver is unchanged; with no kwargs it is returned as is.
func (p *Processor) WithKwargs(fs []media.Field) (*Processor, error) {
	if len(fs) == 0 {
		return p, nil
	}
	base := p
	if p.base != nil {
		base = p.base
	}
	merged := MergeKwargs(p.kwargs, fs)
	q := *base
	q.base, q.kwargs = base, merged
	if kr, ok := base.rules.(kwargsRules); ok {
		r, err := kr.withKwargs(flattenKwargs(merged))
		if err != nil {
			return nil, err
		}
		q.rules = r
	}
	return &q, nil
}

// WithKwargsJSON is WithKwargs of a JSON object's text (--mm-processor-kwargs);
// text that is not a JSON object is ErrBadConfig.
func (p *Processor) WithKwargsJSON(b []byte) (*Processor, error) {
	fs, err := media.FieldsFromJSON(b)
	if err != nil {
		return nil, fmt.Errorf("%w: mm_processor_kwargs: %v", ErrBadConfig, err)
	}
	return p.WithKwargs(fs)
}

// Kwargs returns the mm_processor_kwargs the processor was configured
// with (nil: none). The slice must not be modified.
func (p *Processor) Kwargs() []media.Field { return p.kwargs }

// MergeKwargs is Python's dict union base | over for kwargs in key order:
// base's keys in their order, each replaced by over's value when over has
// it, then over's other keys in theirs. Nested mappings are not merged
// (vLLM's union is shallow).
func MergeKwargs(base, over []media.Field) []media.Field {
	if len(base) == 0 {
		return over
	}
	out := make([]media.Field, 0, len(base)+len(over))
	out = append(out, base...)
	for _, f := range over {
		i := slices.IndexFunc(out, func(g media.Field) bool { return g.Key == f.Key })
		if i >= 0 {
			out[i].Value = f.Value
			continue
		}
		out = append(out, f)
	}
	return out
}

// flattenKwargs merges the modality-scoped images_kwargs over the flat
// keys, the way the HF processor resolves them.
func flattenKwargs(fs []media.Field) map[string]any {
	kw := map[string]any{}
	for _, f := range fs {
		kw[f.Key] = f.Value
	}
	if sub, ok := kw["images_kwargs"].([]media.Field); ok {
		for _, f := range sub {
			kw[f.Key] = f.Value
		}
	}
	if size, ok := kw["size"].([]media.Field); ok {
		for _, f := range size {
			switch f.Key {
			case "shortest_edge":
				if _, set := kw["min_pixels"]; !set {
					kw["min_pixels"] = f.Value
				}
			case "longest_edge":
				if _, set := kw["max_pixels"]; !set {
					kw["max_pixels"] = f.Value
				}
			}
		}
	}
	return kw
}

// numberKwarg reads a kwarg that must be a number (a JSON number as
// FieldsFromJSON gives it, or a Go number); ok is false when it is absent
// or null.
func numberKwarg(kw map[string]any, key string) (f float64, ok bool, err error) {
	v, ok := kw[key]
	if !ok || v == nil {
		return 0, false, nil
	}
	switch x := v.(type) {
	case json.Number:
		if f, err = x.Float64(); err != nil {
			return 0, false, fmt.Errorf("%w: mm_processor_kwargs %s=%v", ErrBadConfig, key, v)
		}
	case float64:
		f = x
	case int:
		f = float64(x)
	default:
		return 0, false, fmt.Errorf("%w: mm_processor_kwargs %s=%v is not a number", ErrBadConfig, key, v)
	}
	return f, true, nil
}

// intKwarg reads an integer kwarg (a JSON number with an integral value).
func intKwarg(kw map[string]any, key string) (int, bool, error) {
	f, ok, err := numberKwarg(kw, key)
	if !ok || err != nil {
		return 0, false, err
	}
	if f != math.Trunc(f) || f < 1 || f > 1<<40 {
		return 0, false, fmt.Errorf("%w: mm_processor_kwargs %s=%v is not a positive integer", ErrBadConfig, key, kw[key])
	}
	return int(f), true, nil
}

func (q *qwenVL) withKwargs(kw map[string]any) (rules, error) {
	c := *q
	lo, okLo, err := intKwarg(kw, "min_pixels")
	if err != nil {
		return nil, err
	}
	hi, okHi, err := intKwarg(kw, "max_pixels")
	if err != nil {
		return nil, err
	}
	if okLo {
		c.minPixels = lo
	}
	if okHi {
		c.maxPixels = hi
	}
	if c.minPixels > c.maxPixels {
		return nil, fmt.Errorf("%w: mm_processor_kwargs min_pixels %d > max_pixels %d", ErrBadConfig, c.minPixels, c.maxPixels)
	}
	if q.fam == FamilyQwen3VL {
		// Qwen3-VL's video processor samples a clip the loader read whole
		// at fps frames a second, and vLLM times the frames with it.
		fps, ok, err := fpsKwarg(kw)
		if err != nil {
			return nil, err
		}
		if ok {
			c.sampleFPS = fps
		}
	}
	return &c, nil
}

// fpsKwarg reads a positive fps, flat or under videos_kwargs (which wins,
// as the HF processor's modality kwargs do).
func fpsKwarg(kw map[string]any) (float64, bool, error) {
	v, ok := kw["fps"]
	if sub, isObj := kw["videos_kwargs"].([]media.Field); isObj {
		for _, f := range sub {
			if f.Key == "fps" {
				v, ok = f.Value, true
			}
		}
	}
	if !ok {
		return 0, false, nil
	}
	return floatKwarg(map[string]any{"fps": v}, "fps")
}

// floatKwarg reads a positive number kwarg.
func floatKwarg(kw map[string]any, key string) (float64, bool, error) {
	f, ok, err := numberKwarg(kw, key)
	if !ok || err != nil {
		return 0, false, err
	}
	if !(f > 0) || f > 1e6 {
		return 0, false, fmt.Errorf("%w: mm_processor_kwargs %s=%v is not a positive number", ErrBadConfig, key, kw[key])
	}
	return f, true, nil
}

func (g *gemma3) withKwargs(kw map[string]any) (rules, error) {
	c := *g
	switch v := kw["do_pan_and_scan"].(type) {
	case nil:
	case bool:
		c.pan.on = v
	default:
		return nil, fmt.Errorf("%w: mm_processor_kwargs do_pan_and_scan=%v is not a boolean", ErrBadConfig, v)
	}
	n, ok, err := intKwarg(kw, "pan_and_scan_min_crop_size")
	if err != nil {
		return nil, err
	}
	if ok {
		c.pan.minCrop = n
	}
	if n, ok, err = intKwarg(kw, "pan_and_scan_max_num_crops"); err != nil {
		return nil, err
	} else if ok {
		c.pan.maxCrops = n
	}
	if r, ok, err := floatKwarg(kw, "pan_and_scan_min_ratio_to_activate"); err != nil {
		return nil, err
	} else if ok {
		c.pan.minRatio = r
	}
	return &c, nil
}
