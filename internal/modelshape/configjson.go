package modelshape

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrUnsupported is wrapped by the error for an architecture this package
// does not model.
var ErrUnsupported = errors.New("unsupported architecture")

// maxConfigBytes bounds what is read of a config.json; real ones are a few KB.
const maxConfigBytes = 4 << 20

// Load reads dir/config.json.
func Load(dir string) (*Shape, error) {
	path := filepath.Join(dir, "config.json")
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("model shape: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("model shape: read %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("model shape: %s is larger than %d bytes", path, maxConfigBytes)
	}
	s, err := Parse(data, dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := readModelOpt(s, filepath.Join(dir, "hf_quant_config.json")); err != nil {
		return nil, err
	}
	return s, nil
}

// readModelOpt applies NVIDIA ModelOpt's hf_quant_config.json, where its
// checkpoints (nvidia/*-FP8) declare their quantization instead of
// config.json; a missing file changes nothing.
func readModelOpt(s *Shape, path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("model shape: %w", err)
	}
	var q struct {
		Quantization struct {
			QuantAlgo string `json:"quant_algo"`
		} `json:"quantization"`
	}
	if err := json.Unmarshal(data, &q); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if algo := strings.ToLower(q.Quantization.QuantAlgo); algo != "" {
		s.QuantMethod = "modelopt"
		s.FP8Weights = algo == "fp8"
		s.FP4Weights = algo == "nvfp4"
		if !s.FP8Weights && !s.FP4Weights {
			s.QuantMethod = "modelopt " + algo
		}
	}
	return nil
}

// Supported lists the config.json architecture names Parse accepts.
func Supported() []string {
	out := make([]string, 0, len(architectures))
	for a := range architectures {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// fields is a config.json object with typed, field-naming getters.
type fields map[string]json.RawMessage

func (f fields) has(key string) bool {
	v, ok := f[key]
	return ok && string(v) != "null"
}

// int reads a required integer field.
func (f fields) int(key string) (int, error) {
	if !f.has(key) {
		return 0, fmt.Errorf("missing field %q", key)
	}
	var x float64
	if err := json.Unmarshal(f[key], &x); err != nil || x != float64(int(x)) {
		return 0, fmt.Errorf("field %q: want an integer, got %s", key, f[key])
	}
	return int(x), nil
}

// intOr reads an optional integer field.
func (f fields) intOr(key string, def int) (int, error) {
	if !f.has(key) {
		return def, nil
	}
	return f.int(key)
}

// intList reads an optional list of integers; ok reports whether it is
// there.
func (f fields) intList(key string) (list []int, ok bool, err error) {
	if !f.has(key) {
		return nil, false, nil
	}
	if err := json.Unmarshal(f[key], &list); err != nil {
		return nil, false, fmt.Errorf("field %q: want a list of integers, got %s", key, f[key])
	}
	return list, true, nil
}

func (f fields) str(key string) string {
	var s string
	if f.has(key) {
		_ = json.Unmarshal(f[key], &s)
	}
	return s
}

func (f fields) boolOr(key string, def bool) bool {
	b := def
	if f.has(key) {
		_ = json.Unmarshal(f[key], &b)
	}
	return b
}

// Parse reads a config.json's bytes; name labels the shape and errors.
func Parse(data []byte, name string) (*Shape, error) {
	var top fields
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("config.json is not a JSON object: %w", err)
	}
	var archs []string
	if top.has("architectures") {
		if err := json.Unmarshal(top["architectures"], &archs); err != nil {
			return nil, fmt.Errorf("field \"architectures\": want a list of names, got %s", top["architectures"])
		}
	}
	if len(archs) == 0 {
		return nil, errors.New(`missing field "architectures"`)
	}
	arch := archs[0]
	family, ok := architectures[arch]
	if !ok {
		return nil, fmt.Errorf("%w %q (supported: %s)", ErrUnsupported, arch, strings.Join(Supported(), ", "))
	}
	f := top
	// Multimodal wrappers (Gemma 3) keep the language model's shape in
	// text_config.
	if top.has("text_config") {
		var tc fields
		if err := json.Unmarshal(top["text_config"], &tc); err != nil {
			return nil, fmt.Errorf("field \"text_config\": %w", err)
		}
		f = tc
	}
	s := &Shape{Name: name, Architecture: arch, Family: family}
	var err error
	get := func(dst *int, key string) {
		if err == nil {
			*dst, err = f.int(key)
		}
	}
	get(&s.Hidden, "hidden_size")
	get(&s.Layers, "num_hidden_layers")
	get(&s.Heads, "num_attention_heads")
	get(&s.KVHeads, "num_key_value_heads")
	get(&s.Intermediate, "intermediate_size")
	get(&s.MaxPosition, "max_position_embeddings")
	if err == nil {
		// Some multimodal wrappers keep vocab_size at the top level.
		if s.Vocab, err = f.int("vocab_size"); err != nil && top.has("vocab_size") {
			s.Vocab, err = top.int("vocab_size")
		}
	}
	if err != nil {
		return nil, err
	}
	if s.Heads > 0 {
		if s.HeadDim, err = f.intOr("head_dim", s.Hidden/s.Heads); err != nil {
			return nil, err
		}
	}
	s.WeightDtype = f.str("torch_dtype")
	if s.WeightDtype == "" {
		s.WeightDtype = f.str("dtype")
	}
	if s.WeightDtype == "" {
		s.WeightDtype = top.str("torch_dtype")
	}
	if s.WeightDtype == "" {
		s.WeightDtype = "bfloat16"
	}
	gemma := family == FamilyGemma2 || family == FamilyGemma3
	s.TiedEmbed = f.boolOr("tie_word_embeddings", top.boolOr("tie_word_embeddings", gemma))
	if top.has("quantization_config") {
		var q struct {
			QuantMethod     string `json:"quant_method"`
			QuantAlgo       string `json:"quant_algo"`
			WeightBlockSize []int  `json:"weight_block_size"`
		}
		_ = json.Unmarshal(top["quantization_config"], &q)
		s.QuantMethod = strings.ToLower(q.QuantMethod)
		// FP8 checkpoints: vLLM's own format, Meta's fbgemm_fp8 (405B) and
		// NVIDIA ModelOpt's FP8.
		s.FP8Weights = s.QuantMethod == "fp8" || s.QuantMethod == "fbgemm_fp8" ||
			(s.QuantMethod == "modelopt" && strings.EqualFold(q.QuantAlgo, "fp8"))
		s.FP8Block = s.FP8Weights && len(q.WeightBlockSize) > 0
	}
	if err := parseFamily(s, f); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// parseFamily reads the family-specific fields: sliding windows, experts,
// latent attention.
func parseFamily(s *Shape, f fields) error {
	var err error
	switch s.Family {
	case FamilyMistral:
		if s.SlidingWindow, err = f.intOr("sliding_window", 0); err != nil {
			return err
		}
		if s.SlidingWindow > 0 {
			s.SlidingLayers = s.Layers
		}
	case FamilyQwen2, FamilyQwen3:
		// Qwen's sliding_window is only used with use_sliding_window,
		// which the published checkpoints leave off.
		if f.boolOr("use_sliding_window", false) {
			if s.SlidingWindow, err = f.int("sliding_window"); err != nil {
				return err
			}
			mw, err := f.intOr("max_window_layers", s.Layers)
			if err != nil {
				return err
			}
			s.SlidingLayers = max(0, s.Layers-mw)
		}
	case FamilyGemma2:
		// Gemma 2 alternates local (sliding) and global layers.
		if s.SlidingWindow, err = f.int("sliding_window"); err != nil {
			return err
		}
		s.SlidingLayers = (s.Layers + 1) / 2
	case FamilyGemma3:
		if s.SlidingWindow, err = f.int("sliding_window"); err != nil {
			return err
		}
		var types []string
		if f.has("layer_types") {
			_ = json.Unmarshal(f["layer_types"], &types)
		}
		if len(types) > 0 {
			for _, t := range types {
				if t == "sliding_attention" {
					s.SlidingLayers++
				}
			}
		} else {
			// Every pattern-th layer is global, the others slide.
			p, err := f.intOr("sliding_window_pattern", 6)
			if err != nil {
				return err
			}
			s.SlidingLayers = s.Layers - s.Layers/max(p, 1)
		}
	case FamilyMixtral:
		if s.MoE.Experts, err = f.int("num_local_experts"); err != nil {
			return err
		}
		if s.MoE.TopK, err = f.int("num_experts_per_tok"); err != nil {
			return err
		}
		s.MoE.Intermediate = s.Intermediate
		if s.SlidingWindow, err = f.intOr("sliding_window", 0); err != nil {
			return err
		}
		if s.SlidingWindow > 0 {
			s.SlidingLayers = s.Layers
		}
	case FamilyQwen3MoE:
		if s.MoE.Experts, err = f.int("num_experts"); err != nil {
			return err
		}
		if s.MoE.TopK, err = f.int("num_experts_per_tok"); err != nil {
			return err
		}
		if s.MoE.Intermediate, err = f.int("moe_intermediate_size"); err != nil {
			return err
		}
		var dense []int
		if f.has("mlp_only_layers") {
			_ = json.Unmarshal(f["mlp_only_layers"], &dense)
		}
		s.MoE.DenseLayers = len(dense)
	case FamilyDeepSeekV3:
		m := &s.MoE
		if m.Experts, err = f.int("n_routed_experts"); err != nil {
			return err
		}
		if m.TopK, err = f.int("num_experts_per_tok"); err != nil {
			return err
		}
		if m.Intermediate, err = f.int("moe_intermediate_size"); err != nil {
			return err
		}
		shared, err := f.intOr("n_shared_experts", 0)
		if err != nil {
			return err
		}
		m.SharedIntermediate = shared * m.Intermediate
		if m.DenseLayers, err = f.intOr("first_k_dense_replace", 0); err != nil {
			return err
		}
		a := &s.MLA
		if a.QLoRARank, err = f.intOr("q_lora_rank", 0); err != nil {
			return err
		}
		for _, x := range []struct {
			dst *int
			key string
		}{{&a.KVLoRARank, "kv_lora_rank"}, {&a.QKNopeDim, "qk_nope_head_dim"}, {&a.QKRopeDim, "qk_rope_head_dim"}, {&a.VHeadDim, "v_head_dim"}} {
			if *x.dst, err = f.int(x.key); err != nil {
				return err
			}
		}
		s.HeadDim = a.QKNopeDim + a.QKRopeDim
	case FamilyLlama4:
		return parseLlama4(s, f)
	}
	return nil
}

// parseLlama4 reads Llama 4's text_config. Its intermediate_size is the
// width of one expert (and of the shared expert every token also runs),
// intermediate_size_mlp that of the dense layers; the MoE layers are
// moe_layers, by default every interleave_moe_layer_step-th layer
// (transformers' Llama4TextConfig: range(step−1, layers, step)); a layer
// whose no_rope_layers entry is 1 uses RoPE and, with
// attention_chunk_size, chunked local attention (vLLM's Llama4Attention,
// use_chunked_local_attn), by default (an absent or empty list) all but
// every no_rope_layer_interval-th (4) layer.
func parseLlama4(s *Shape, f fields) error {
	var err error
	m := &s.MoE
	m.Intermediate = s.Intermediate
	m.SharedIntermediate = m.Intermediate
	if s.Intermediate, err = f.int("intermediate_size_mlp"); err != nil {
		return err
	}
	if m.Experts, err = f.int("num_local_experts"); err != nil {
		return err
	}
	if m.TopK, err = f.int("num_experts_per_tok"); err != nil {
		return err
	}
	moeLayers := s.Layers
	if list, ok, err := f.intList("moe_layers"); err != nil {
		return err
	} else if ok {
		moeLayers = len(list)
	} else {
		step, err := f.intOr("interleave_moe_layer_step", 1)
		if err != nil {
			return err
		}
		if step < 1 {
			return fmt.Errorf("field \"interleave_moe_layer_step\": want ≥ 1, got %d", step)
		}
		moeLayers = s.Layers / step
	}
	m.DenseLayers = s.Layers - moeLayers
	if s.AttentionChunk, err = f.intOr("attention_chunk_size", 0); err != nil {
		return err
	}
	switch {
	case s.AttentionChunk < 0:
		return fmt.Errorf("field \"attention_chunk_size\": want ≥ 0, got %d", s.AttentionChunk)
	case s.AttentionChunk == 0:
		return nil // every layer attends globally
	}
	// An empty no_rope_layers takes the default, as transformers does.
	if list, _, err := f.intList("no_rope_layers"); err != nil {
		return err
	} else if len(list) > 0 {
		for _, v := range list {
			if v != 0 {
				s.ChunkedLayers++
			}
		}
		return nil
	}
	interval, err := f.intOr("no_rope_layer_interval", 4)
	if err != nil {
		return err
	}
	if interval < 1 {
		return fmt.Errorf("field \"no_rope_layer_interval\": want ≥ 1, got %d", interval)
	}
	s.ChunkedLayers = s.Layers - s.Layers/interval
	return nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
