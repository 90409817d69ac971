package mmproc

import (
	"bytes"
	"encoding/json"
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/testutil"
)

// jsResult is one case as testdata/jsref.mjs answers it.
type jsResult struct {
	refCase
	JS    *int   `json:"js"`
	Error string `json:"error"`
}

// TestTokensAgainstTransformersJS runs the image cases of cases.json (up to
// 0.6 megapixels, to keep the run short; Llama 4, InternVL and
// Phi-4-multimodal have no processor there, Qwen2-VL's rules are
// Qwen2.5-VL's, and Qwen2.5-Omni's images go through its image processor,
// Qwen2VLImageProcessor)
// through
// @huggingface/transformers — an independent implementation of the Hugging
// Face processors — and compares. transformers.js differs from the Python
// processors vLLM runs in two documented ways, both in Qwen's smart_resize:
// JavaScript's Math.round rounds halves up where Python rounds them to even,
// and it first scales a side shorter than the factor up to it. Every
// disagreement must be one of those: the test recomputes it under the
// JavaScript rules and lists it.
func TestTokensAgainstTransformersJS(t *testing.T) {
	modules := testutil.NodeModules(t)
	var sel []refCase
	for _, c := range loadCases(t) {
		// Nor pan-and-scan: its Gemma 3 processor ignores do_pan_and_scan.
		if c.Kind != "image" || c.PanScan || c.Width*c.Height > 600_000 || strings.HasPrefix(c.Model, "meta-llama/") || strings.HasPrefix(c.Model, "Qwen/Qwen2-VL") {
			continue
		}
		// transformers.js has no InternVL, Phi-4-multimodal or LLaVA-NeXT
		// processor, and its LLaVA-OneVision one is a plain image processor
		// (no anyres token count).
		if f := processorFor(t, c).Family(); f == FamilyInternVL || f == FamilyPhi4MM || f == FamilyLlavaNext || f == FamilyLlavaOV {
			continue
		}
		sel = append(sel, c)
	}
	in, _ := json.Marshal(sel)
	cmd := exec.Command("node", "testdata/jsref.mjs", modules)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node jsref.mjs: %v\n%s", err, stderr.String())
	}
	var res []jsResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != len(sel) {
		t.Fatalf("%d answers for %d cases", len(res), len(sel))
	}
	agree, explained := 0, 0
	var table strings.Builder
	for _, r := range res {
		p := processorFor(t, r.refCase)
		got, err := p.Tokens(media.Item{Kind: media.KindImage, Width: r.Width, Height: r.Height})
		if r.JS == nil {
			if err == nil {
				t.Errorf("%s: transformers.js refused (%s), Go counts %d", r.refCase, r.Error, got)
			}
			agree++
			continue
		}
		if err == nil && got == *r.JS {
			agree++
			continue
		}
		q, ok := p.rules.(*qwenVL)
		if o, omni := p.rules.(*qwenOmni); omni {
			q, ok = o.vision, true
		}
		if !ok {
			t.Errorf("%s: Go %d (%v), transformers.js %d", r.refCase, got, err, *r.JS)
			continue
		}
		js := jsSmartResizeTokens(r.Height, r.Width, q.patch*q.merge, q.minPixels, q.maxPixels, q.patch)
		if js != *r.JS {
			t.Errorf("%s: Go %d (%v), transformers.js %d, not explained by its rounding (which gives %d)", r.refCase, got, err, *r.JS, js)
			continue
		}
		explained++
		table.WriteString("| " + r.refCase.String() + " | " + itoa(got) + " | " + itoa(*r.JS) + " |\n")
	}
	t.Logf("%d cases agree, %d differ only by transformers.js's rounding or small-side upscaling:\n| case | Python rules (vLLM) | transformers.js |\n|---|---|---|\n%s", agree, explained, table.String())
	if agree < len(res)*3/4 {
		t.Errorf("only %d of %d agree", agree, len(res))
	}
}

// jsSmartResizeTokens is transformers.js's smart_resize (half-up rounding;
// sides under the factor scaled up first), to explain its differences.
func jsSmartResizeTokens(h, w, factor, minPx, maxPx, patch int) int {
	hf, wf, f := float64(h), float64(w), float64(factor)
	if h < factor || w < factor {
		s := max(f/hf, f/wf)
		hf, wf = math.Floor(hf*s+0.5), math.Floor(wf*s+0.5)
	}
	hb := math.Floor(hf/f+0.5) * f
	wb := math.Floor(wf/f+0.5) * f
	switch {
	case hb*wb > float64(maxPx):
		beta := math.Sqrt(hf * wf / float64(maxPx))
		hb = max(f, math.Floor(hf/beta/f)*f)
		wb = max(f, math.Floor(wf/beta/f)*f)
	case hb*wb < float64(minPx):
		beta := math.Sqrt(float64(minPx) / (hf * wf))
		hb = math.Ceil(hf*beta/f) * f
		wb = math.Ceil(wf*beta/f) * f
	}
	return int(hb) / patch * (int(wb) / patch) / 4
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestWhisperWindowAgainstTransformersJS checks the encoder positions of a
// Whisper window (Transcription.EncoderPositions, and so the engine work
// of every window) against transformers.js's WhisperFeatureExtractor:
// every clip up to the window, 0.1 s or 30 s, is padded to the same mel
// frames, which the encoder's stride-2 convolution halves.
func TestWhisperWindowAgainstTransformersJS(t *testing.T) {
	modules := testutil.NodeModules(t)
	tr, _ := mustModel(t, "openai/whisper-large-v3", ModelFiles{}).Transcription()
	out, err := exec.Command("node", "testdata/jswhisper.mjs", modules, "128", "0.1", "1", "10", "29.5", "30").Output()
	if err != nil {
		t.Fatalf("node jswhisper.mjs: %v", err)
	}
	var res []struct {
		Seconds float64
		Dims    []int
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 5 {
		t.Fatalf("%s: %v", out, err)
	}
	for _, r := range res {
		if len(r.Dims) != 3 || r.Dims[1] != 128 || r.Dims[2]/2 != tr.EncoderPositions {
			t.Errorf("%gs: features %v, want [1 128 %d]", r.Seconds, r.Dims, 2*tr.EncoderPositions)
		}
	}
}
