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
