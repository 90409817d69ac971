package hardware_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/kv"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

var updateValidation = flag.Bool("update", false, "rewrite testdata/encoder_validation.md from the recomputed table")

// encoderValidation is testdata/encoder_validation.json: published measured
// encoder times, with the tower and language model each was taken on.
type encoderValidation struct {
	Towers map[string]struct {
		Config json.RawMessage `json:"config"`
	} `json:"towers"`
	LLMs map[string]struct {
		Config json.RawMessage `json:"config"`
	} `json:"llms"`
	Points []validationPoint `json:"points"`
}

// validationPoint is one published measurement.
type validationPoint struct {
	ID    string `json:"id"`
	Tower string `json:"tower"` // a towers key, or
	Model string `json:"model"` // an mmproc catalogue id
	LLM   string `json:"llm"`   // an llms key or a modelshape catalogue id
	GPU   string `json:"gpu"`
	Image []int  `json:"image"` // width, height
	// Mix is a draw of images: width, height, probability.
	Mix          [][3]float64 `json:"mix"`
	AudioS       float64      `json:"audio_s"`
	Items        int          `json:"items"`
	TP           int          `json:"tp"`
	PromptTokens int          `json:"prompt_tokens"`
	// Kind: encoder (the tower's forward alone), first-pass (the pass that
	// encodes the item and prefills the prompt), ttft.
	Kind       string  `json:"kind"`
	MeasuredMs float64 `json:"measured_ms"`
	Engine     string  `json:"engine"`
	Source     string  `json:"source"`
}

// predicted is the mock's figures for a point — by the tower's FLOPs
// (EncoderMs) and by its operators (EncoderWorkMs) — and the tower FLOPs.
type predicted struct {
	p       validationPoint
	name    string // model or tower, for the table
	flops   float64
	byFLOPs float64
	byWork  float64
}

func (r predicted) errFLOPs() float64 { return r.byFLOPs/r.p.MeasuredMs - 1 }
func (r predicted) errWork() float64  { return r.byWork/r.p.MeasuredMs - 1 }

// TestEncoderTimeAgainstPublishedMeasurements recomputes the mock's
// prediction for every published encoder time in
// testdata/encoder_validation.json (none of which the model was fitted to)
// and compares the error table with testdata/encoder_validation.md, which
// docs/multimodal.md quotes; -update rewrites it.
func TestEncoderTimeAgainstPublishedMeasurements(t *testing.T) {
	raw, err := os.ReadFile("testdata/encoder_validation.json")
	if err != nil {
		t.Fatal(err)
	}
	var v encoderValidation
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var rows []predicted
	for _, p := range v.Points {
		r, err := predict(&v, p)
		if err != nil {
			t.Fatalf("%s: %v", p.ID, err)
		}
		rows = append(rows, r)
	}
	if len(rows) < 15 {
		t.Fatalf("%d points, want at least 15", len(rows))
	}
	// The operator model, which replaced the FLOP price, must stay the
	// better of the two on the encoder points it prices directly.
	var byFLOPs, byWork float64
	for _, r := range rows {
		if r.p.Kind == "encoder" {
			byFLOPs += math.Abs(r.errFLOPs())
			byWork += math.Abs(r.errWork())
		}
	}
	if byWork >= byFLOPs {
		t.Errorf("encoder points: the operator model's total |error| %.2f is not below the FLOP price's %.2f", byWork, byFLOPs)
	}
	table := validationTable(rows)
	t.Log("\n" + table)
	const golden = "testdata/encoder_validation.md"
	if *updateValidation {
		if err := os.WriteFile(golden, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != table {
		t.Errorf("%s is not the recomputed table; run go test -run TestEncoderTimeAgainstPublishedMeasurements ./internal/hardware -update and copy it into docs/multimodal.md", golden)
	}
	doc, err := os.ReadFile("../../docs/multimodal.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, want) {
		t.Errorf("docs/multimodal.md does not quote %s verbatim", golden)
	}
}

// predict computes the mock's figure for p: the engine's encoder cost of
// its items (each priced alone by EncoderMs, as the engine does), or the
// first-token time of a one-request simulation with the hardware model.
func predict(v *encoderValidation, p validationPoint) (predicted, error) {
	var files mmproc.ModelFiles
	name := p.Model
	if p.Tower != "" {
		tw, ok := v.Towers[p.Tower]
		if !ok {
			return predicted{}, fmt.Errorf("no tower %q", p.Tower)
		}
		files.Config, name = tw.Config, p.Tower
	}
	proc, err := mmproc.ForModel(name, files)
	if err != nil {
		return predicted{}, err
	}
	var shape *modelshape.Shape
	if l, ok := v.LLMs[p.LLM]; ok {
		shape, err = modelshape.Parse(l.Config, p.LLM)
	} else if s, ok := modelshape.Known(p.LLM); ok {
		shape = s
	} else {
		err = fmt.Errorf("no language model %q", p.LLM)
	}
	if err != nil {
		return predicted{}, err
	}
	hw, err := hardware.New(hardware.Options{GPU: p.GPU, Shape: shape})
	if err != nil {
		return predicted{}, err
	}
	type draw struct {
		it media.Item
		w  float64
	}
	var draws []draw
	switch {
	case len(p.Image) == 2:
		draws = []draw{{media.Item{Kind: media.KindImage, Width: p.Image[0], Height: p.Image[1]}, 1}}
	case len(p.Mix) > 0:
		for _, m := range p.Mix {
			draws = append(draws, draw{media.Item{Kind: media.KindImage, Width: int(m[0]), Height: int(m[1])}, m[2]})
		}
	case p.AudioS > 0:
		d := time.Duration(p.AudioS * float64(time.Second))
		draws = []draw{{media.Item{Kind: media.KindAudio, Duration: d, SampleRate: 16000, Channels: 1}, 1}}
	default:
		return predicted{}, fmt.Errorf("no item")
	}
	items, tp := max(p.Items, 1), max(p.TP, 1)
	r := predicted{p: p, name: name}
	for _, d := range draws {
		flops, err := proc.EncoderFLOPs(d.it)
		if err != nil {
			return predicted{}, err
		}
		tokens, err := proc.Tokens(d.it)
		if err != nil {
			return predicted{}, err
		}
		work, err := proc.EncoderWork(d.it)
		if err != nil {
			return predicted{}, err
		}
		r.flops += d.w * flops
		switch p.Kind {
		case "encoder":
			r.byFLOPs += d.w * float64(items) * hw.EncoderMs(flops, tokens, tp)
			batch := make([]*engine.EncoderWork, items)
			for i := range batch {
				batch[i] = work
			}
			r.byWork += d.w * hw.EncoderWorkMs(batch, tp)
		case "first-pass", "ttft":
			byFLOPs, err := firstTokenMs(hw, p.PromptTokens, tokens, flops, nil)
			if err != nil {
				return predicted{}, err
			}
			byWork, err := firstTokenMs(hw, p.PromptTokens, tokens, flops, work)
			if err != nil {
				return predicted{}, err
			}
			r.byFLOPs += d.w * byFLOPs
			r.byWork += d.w * byWork
		default:
			return predicted{}, fmt.Errorf("kind %q", p.Kind)
		}
	}
	return r, nil
}

// firstTokenMs runs one request of promptTokens tokens, imageTokens of
// them an image of flops encoder FLOPs (and work, when not nil), through
// an engine core timed by hw (vLLM's defaults otherwise) and returns its
// time to first token.
func firstTokenMs(hw *hardware.Model, promptTokens, imageTokens int, flops float64, work *engine.EncoderWork) (float64, error) {
	if promptTokens <= imageTokens {
		return 0, fmt.Errorf("prompt of %d tokens cannot hold an image of %d", promptTokens, imageTokens)
	}
	cfg := engine.DefaultConfig()
	cfg.TimingModel = hw
	cfg.MaxModelLen = max(cfg.MaxModelLen, promptTokens+1)
	core, err := engine.NewCore(cfg, engine.CoreOptions{})
	if err != nil {
		return 0, err
	}
	sim := engine.NewSimulator(core)
	out := engine.NewOutput()
	prompt := make([]uint32, promptTokens)
	for i := range prompt {
		prompt[i] = uint32(i + 1)
	}
	const offset = 15 // the chat template's tokens before the image
	sim.SubmitAt(0, &engine.Request{ID: engine.NewRequestID(), Prompt: prompt, PlannedOutput: []uint32{7},
		MM:      []kv.MMFeature{{Identifier: "image", Offset: offset, Length: imageTokens}},
		MMFLOPs: []float64{flops}, MMWork: []*engine.EncoderWork{work}, Out: out})
	sim.Run(0)
	for _, it := range out.Drain(nil) {
		if !it.Final {
			return float64(it.Time.Sub(engine.VirtualEpoch)) / float64(time.Millisecond), nil
		}
	}
	return 0, fmt.Errorf("no token")
}

// validationTable renders the per-point table and the error summaries
// (mean of |error|, mean signed error, worst) by model, GPU and kind.
func validationTable(rows []predicted) string {
	var b strings.Builder
	b.WriteString("| point | tower / model | GPU | kind | items | tower TFLOP | measured ms | by FLOPs ms | error | by operators ms | error |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %.3g | %.4g | %.4g | %+.0f%% | %.4g | %+.0f%% |\n",
			r.p.ID, r.name, r.p.GPU, r.p.Kind, max(r.p.Items, 1), r.flops/1e12, r.p.MeasuredMs,
			r.byFLOPs, 100*r.errFLOPs(), r.byWork, 100*r.errWork())
	}
	for _, g := range []struct {
		title string
		key   func(predicted) string
	}{
		{"model", func(r predicted) string { return r.name }},
		{"GPU", func(r predicted) string { return r.p.GPU }},
		{"kind", func(r predicted) string { return r.p.Kind }},
	} {
		fmt.Fprintf(&b, "\n| by %s | points | by FLOPs: mean abs error | mean error | worst | by operators: mean abs error | mean error | worst |\n|---|---|---|---|---|---|---|---|\n", g.title)
		groups := map[string][]predicted{}
		var keys []string
		for _, r := range rows {
			k := g.key(r)
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], r)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %d | %s | %s |\n", k, len(groups[k]),
				errorSummary(groups[k], predicted.errFLOPs), errorSummary(groups[k], predicted.errWork))
		}
	}
	return b.String()
}

// errorSummary is the mean absolute error, mean error and worst error of
// rs by err, as table cells.
func errorSummary(rs []predicted, err func(predicted) float64) string {
	abs, sum, worst := 0.0, 0.0, 0.0
	for _, r := range rs {
		e := err(r)
		abs += math.Abs(e)
		sum += e
		if math.Abs(e) > math.Abs(worst) {
			worst = e
		}
	}
	n := float64(len(rs))
	return fmt.Sprintf("%.0f%% | %+.0f%% | %+.0f%%", 100*abs/n, 100*sum/n, 100*worst)
}
