package api

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/api/settings"
	"github.com/mocker-server/mocker-server/internal/engine"
	"github.com/mocker-server/mocker-server/internal/hardware"
	"github.com/mocker-server/mocker-server/internal/media"
	"github.com/mocker-server/mocker-server/internal/mmproc"
	"github.com/mocker-server/mocker-server/internal/modelshape"
)

// passLog records the modeled durations of the passes that emit a first
// token (with max_tokens 1, each request's one prefill pass).
type passLog struct {
	mu     sync.Mutex
	passes []time.Duration
}

func (p *passLog) ObserveGauges(engine.Gauges) {}
func (p *passLog) ObservePass(r *engine.PassReport) {
	if r.IsPass && len(r.First) > 0 {
		p.mu.Lock()
		p.passes = append(p.passes, r.Duration)
		p.mu.Unlock()
	}
}

// Through the server with --hardware, a chat image's encoder time is its
// tower priced operator by operator (the processor's EncoderWork reached
// the engine), not its FLOPs: the same request again, its image in the
// encoder cache and prefix caching off, computes the same tokens without
// the encoder, and the difference is EncoderWorkMs of that image.
func TestMultimodal_HardwarePricesTheImagesTowerByItsOperators(t *testing.T) {
	const speedup = 1000
	cfg := testConfig(t, map[string]any{"model": "Qwen/Qwen2.5-7B-Instruct", "hardware": "h100_sxm",
		"mm_processor_model": "Qwen/Qwen2.5-VL-7B-Instruct", "enable_prefix_caching": false, "speedup_ratio": speedup})
	log := &passLog{}
	env := startServerWith(t, cfg, func(r int) engine.Options { return engine.Options{Rank: r, Observer: log} },
		settings.Deps{Version: "test-version"})
	body := chatWithImage("What is in this picture?", dataURL("image/png", pngBytes(t, 1024, 768, 9)), 1)
	for range 2 {
		if r := env.post("/v1/chat/completions", body); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	log.mu.Lock()
	passes := append([]time.Duration(nil), log.passes...)
	log.mu.Unlock()
	if len(passes) != 2 {
		t.Fatalf("prefill passes %v, want one per request", passes)
	}
	encoderMs := float64(passes[0]-passes[1]) / float64(time.Millisecond) * speedup

	shape, _ := modelshape.Known("Qwen/Qwen2.5-7B-Instruct")
	hw, err := hardware.New(hardware.Options{GPU: "h100_sxm", Shape: shape})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := mmproc.ForModel("Qwen/Qwen2.5-VL-7B-Instruct", mmproc.ModelFiles{})
	if err != nil {
		t.Fatal(err)
	}
	img := media.Item{Kind: media.KindImage, Width: 1024, Height: 768}
	work, _ := proc.EncoderWork(img)
	flops, _ := proc.EncoderFLOPs(img)
	tokens, _ := proc.Tokens(img)
	want := hw.EncoderWorkMs([]*engine.EncoderWork{work}, 1)
	if math.Abs(encoderMs-want) > 0.01 {
		t.Errorf("encoder time %.3f ms (passes %v), want the tower's operators' %.3f ms (its FLOPs would be %.3f ms)",
			encoderMs, passes, want, hw.EncoderMs(flops, tokens, 1))
	}
	t.Logf("1024×768 on an H100: %.2f ms in the pass, %.2f ms by operators, %.2f ms by FLOPs", encoderMs, want, hw.EncoderMs(flops, tokens, 1))
}
