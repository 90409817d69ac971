package hardware

import (
	"math"
	"testing"
)

// The operator lookups return the measured latencies at measured points.
// The expected values are rows of aiconfigurator's tables as published
// (commit in data/NOTICE, systems/data/h100_sxm/.../vllm/0.24.0/*.parquet),
// read from the parquet files, not from our derived JSON: the derivation
// rounds to 4 significant digits, so they agree to 0.05 %.
func TestLookups_MatchSourceTableRows(t *testing.T) {
	tf, err := loadTables("h100_sxm")
	if err != nil {
		t.Fatal(err)
	}
	ft := tf.Frameworks["vllm"]
	if ft == nil || ft.Versions["gemm"] != "0.24.0" {
		t.Fatalf("vllm tables: %+v", ft)
	}
	h100, _ := Lookup("h100_sxm")
	ctx, ctxScale := pickAttn(ft.Context, attnShape{heads: 32, kvHeads: 8, headDim: 128})
	gen, genScale := pickAttn(ft.Gen, attnShape{heads: 32, kvHeads: 8, headDim: 128})
	if ctxScale != 1 || genScale != 1 || ctx.Heads != 32 || ctx.KVHeads != 8 || gen.KVDtype != "bfloat16" {
		t.Fatalf("picked ctx %d/%d scale %v, gen %d/%d %s scale %v", ctx.Heads, ctx.KVHeads, ctxScale, gen.Heads, gen.KVHeads, gen.KVDtype, genScale)
	}
	moe, ok := moeCurve(ft.MoE, []string{"power_law_1.2"}, []string{"bfloat16"}, 2048, 768, 8, 128, 1)
	if !ok {
		t.Fatal("no fused-MoE series for 2048/768/top-8/128 experts")
	}
	for _, c := range []struct {
		name string
		got  float64
		want float64 // ms, the source row's latency
	}{
		{"gemm bfloat16 m=1024 n=4096 k=4096", ptr(gemmCurve(ft.GEMM["bfloat16"], h100, h100, bf16, 4096, 4096)).at(1024), 0.043134222428003945},
		{"gemm fp8 m=64 n=6144 k=4096", ptr(gemmCurve(ft.GEMM["fp8"], h100, h100, fp8, 6144, 4096)).at(64), 0.014856000741322836},
		{"context attention b=1 isl=1024 32/8×128", ptr(attnTable(ctx, 1, 2)).at(1, 1024), 0.03551999976237615},
		{"generation attention b=64 kv=2048 32/8×128", ptr(attnTable(gen, 1, 1)).at(64, 2048), 0.18667733669281006},
		{"custom all-reduce 4 GPUs 1Mi elements", ptr(arCurve(ft.AllReduce, 4)).at(1 << 20), 0.018597120046615602},
		{"fused MoE bfloat16 64 tokens, power law 1.2", moe.at(64), 0.40363521575927735},
	} {
		if rel := math.Abs(c.got-c.want) / c.want; rel > 5e-4 {
			t.Errorf("%s = %.6g ms, source row %.6g ms (%.3f %% off)", c.name, c.got, c.want, 100*rel)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Between measured points a lookup interpolates: a GEMM between two
// measured m lies between their latencies, and one off the n, k grid lies
// between its neighbours' (scaled by work).
func TestLookups_InterpolateBetweenMeasurements(t *testing.T) {
	tf, _ := loadTables("h100_sxm")
	g := tf.Frameworks["vllm"].GEMM["bfloat16"]
	h100, _ := Lookup("h100_sxm")
	c := ptr(gemmCurve(g, h100, h100, bf16, 4096, 4096))
	lo, mid, hi := c.at(1024), c.at(1536), c.at(2048)
	if !(lo < mid && mid < hi) {
		t.Errorf("m 1024/1536/2048: %v %v %v, want increasing", lo, mid, hi)
	}
	// n = 14336 lies between 12288 and 16384 on the grid.
	a := ptr(gemmCurve(g, h100, h100, bf16, 12288, 4096)).at(512)
	b := ptr(gemmCurve(g, h100, h100, bf16, 14336, 4096)).at(512)
	d := ptr(gemmCurve(g, h100, h100, bf16, 16384, 4096)).at(512)
	if !(a < b && b < d) {
		t.Errorf("n 12288/14336/16384 at m=512: %v %v %v, want increasing", a, b, d)
	}
}

// Every shipped GPU table has the three engines' kernels, bfloat16 GEMMs,
// attention for the common head shapes and (where the GPU has them) FP8.
func TestTables_ShippedGPUsComplete(t *testing.T) {
	for _, g := range Catalogue() {
		if g.Tables == "" {
			if _, err := Lookup(g.BorrowFrom); err != nil {
				t.Errorf("%s borrows from %q: %v", g.Name, g.BorrowFrom, err)
			}
			continue
		}
		tf, err := loadTables(g.Tables)
		if err != nil {
			t.Fatal(err)
		}
		for _, fw := range []string{"vllm", "sglang", "trtllm"} {
			ft := tf.Frameworks[fw]
			if ft == nil {
				t.Errorf("%s: no %s tables", g.Name, fw)
				continue
			}
			if ft.GEMM["bfloat16"] == nil || len(ft.Context) == 0 || len(ft.Gen) == 0 || ft.AllReduce == nil {
				t.Errorf("%s/%s: missing tables (versions %v)", g.Name, fw, ft.Versions)
			}
			if (g.FP8FLOPS > 0) != (ft.GEMM["fp8"] != nil) {
				t.Errorf("%s/%s: FP8 GEMM table present = %v, GPU FP8 = %v", g.Name, fw, ft.GEMM["fp8"] != nil, g.FP8FLOPS)
			}
			if (g.FP4FLOPS > 0) != (ft.GEMM["nvfp4"] != nil) {
				t.Errorf("%s/%s: NVFP4 GEMM table present = %v, GPU FP4 = %v", g.Name, fw, ft.GEMM["nvfp4"] != nil, g.FP4FLOPS)
			}
		}
	}
}

// A fused-MoE TP without a measurement takes the nearest measured one,
// scaled by the ratio of the GPUs' shares of the experts.
func TestMoE_UnmeasuredTPScalesNearest(t *testing.T) {
	tf, _ := loadTables("h200_sxm")
	ft := tf.Frameworks["vllm"]
	args := func(tp int) (curve, bool) {
		return moeCurve(ft.MoE, []string{"power_law_1.2"}, []string{"fp8_block"}, 4096, 1536, 8, 128, tp)
	}
	tp4, ok4 := args(4)
	tp8, ok8 := args(8) // vLLM's block-FP8 table stops at TP 4
	if !ok4 || !ok8 {
		t.Fatal("no block-FP8 series for Qwen3-235B's experts")
	}
	if got, want := tp8.at(64), tp4.at(64)/2; math.Abs(got-want) > 1e-12 {
		t.Errorf("TP 8 at 64 tokens = %v ms, want TP 4's ÷ 2 = %v", got, want)
	}
	for _, c := range []struct {
		a, b, want int
		closer     bool
	}{{8, 4, 8, true}, {4, 8, 8, false}, {4, 2, 8, true}, {16, 4, 8, false}, {16, 32, 8, true}, {2, 16, 8, true}} {
		if got := closerTP(c.a, c.b, c.want); got != c.closer {
			t.Errorf("closerTP(%d, %d, want %d) = %v", c.a, c.b, c.want, got)
		}
	}
}
