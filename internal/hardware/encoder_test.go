package hardware

import (
	"math"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// EncoderMs: Qwen2.5-VL's tower on a 1024×1024 image (≈ 8 TFLOP,
// mmproc.EncoderFLOPs) next to Qwen2.5-7B's language model on an H100 is
// tens of milliseconds — the order vision encoders take there — at an
// efficiency in (0, 1] taken from the o projection's table; linear in the
// FLOPs, divided by the shards.
func TestEncoderMsFromFLOPsAtTheTablesEfficiency(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "Qwen/Qwen2.5-7B-Instruct")})
	var _ engine.EncoderTimer = m
	const flops, tokens = 8e12, 1369
	ms := m.EncoderMs(flops, tokens, 1)
	floor := 1e3 * flops / m.gpu.BF16FLOPS // at 100 % of peak
	if ms < floor || ms > 10*floor || math.IsNaN(ms) {
		t.Fatalf("8 TFLOP: %.2f ms, want between the peak's %.2f ms and 10×", ms, floor)
	}
	if got := m.EncoderMs(2*flops, tokens, 1); math.Abs(got-2*ms) > 1e-9*ms {
		t.Errorf("twice the FLOPs: %.3f ms, want %.3f", got, 2*ms)
	}
	if got := m.EncoderMs(flops, tokens, 4); math.Abs(got-ms/4) > 1e-9*ms {
		t.Errorf("4 shards: %.3f ms, want %.3f", got, ms/4)
	}
	if m.EncoderMs(0, tokens, 1) != 0 {
		t.Error("no FLOPs, some time")
	}
	t.Logf("Qwen2.5-VL 1024×1024 on an H100: %.1f ms (peak %.1f ms)", ms, floor)
}

// qwen25VL1024 is Qwen2.5-VL's tower on a 1024×1024 image (74×74
// patches; mmproc's EncoderWork): 32 layers 1280 wide, SwiGLU MLP 3420,
// 80-wide heads, 4 full-attention layers and 8×8-patch windows, then the
// patch embedding and the merger into Qwen2.5-7B's 3584.
func qwen25VL1024() *engine.EncoderWork {
	return &engine.EncoderWork{Rows: 5476, SeqLen: 5476, Window: 64, FullLayers: 4, Layers: 32, Hidden: 1280, MLP: 3420,
		HeadDim: 80, GatedMLP: true, GEMMs: [][3]int{{5476, 1280, 1176}, {1369, 5120, 5120}, {1369, 3584, 5120}}}
}

// EncoderWorkMs prices the tower from its own operators: slower than its
// FLOPs at the language model's GEMM efficiency (the tower's GEMMs are
// narrower, its attention is bidirectional) yet within 10× of the peak;
// two images in one forward cost less than two forwards; weights mode
// over two GPUs is faster; an FP8 language model leaves the BF16 tower's
// time alone; nothing costs nothing.
func TestEncoderWorkMsFromTheTowersOperators(t *testing.T) {
	m := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "Qwen/Qwen2.5-7B-Instruct")})
	var _ engine.EncoderWorkTimer = m
	w := qwen25VL1024()
	flops := w.FLOPs()
	one := m.EncoderWorkMs([]*engine.EncoderWork{w}, 1)
	floor := 1e3 * flops / m.gpu.BF16FLOPS
	if byFLOPs := m.EncoderMs(flops, 1369, 1); one <= byFLOPs || one > 10*floor || math.IsNaN(one) {
		t.Fatalf("1024×1024: %.2f ms; want above the FLOP price %.2f ms and within 10× the peak's %.2f ms", one, byFLOPs, floor)
	}
	two := m.EncoderWorkMs([]*engine.EncoderWork{w, w}, 1)
	if two <= one || two >= 2*one {
		t.Errorf("two images in one forward: %.2f ms, want between one image's %.2f and twice it", two, one)
	}
	tp2 := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "Qwen/Qwen2.5-7B-Instruct"), TP: 2})
	if sharded := tp2.EncoderWorkMs([]*engine.EncoderWork{w}, 2); sharded >= one || sharded <= one/4 {
		t.Errorf("over 2 GPUs: %.2f ms, want below %.2f and above a quarter of it", sharded, one)
	}
	fp8 := mustNew(t, Options{GPU: "h100_sxm", Shape: known(t, "Qwen/Qwen2.5-7B-Instruct"), Quantization: "fp8"})
	if got := fp8.EncoderWorkMs([]*engine.EncoderWork{w}, 1); got != one {
		t.Errorf("FP8 language model: tower %.3f ms, want the BF16 tower's %.3f", got, one)
	}
	if got := m.EncoderWorkMs(nil, 1) + m.EncoderWorkMs([]*engine.EncoderWork{nil, {}}, 1); got != 0 {
		t.Errorf("no work: %v ms", got)
	}
	t.Logf("Qwen2.5-VL 1024×1024 on an H100: %.1f ms by operators, %.1f ms by FLOPs (peak %.1f ms)", one, m.EncoderMs(flops, 1369, 1), floor)
}
