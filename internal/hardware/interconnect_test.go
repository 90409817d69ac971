package hardware

import (
	"math"
	"testing"

	"github.com/mocker-server/mocker-server/internal/engine"
)

// NCCL's ring model by hand (constants of tuning.cc): 8 MB among 4 ranks
// on PCIe Gen4 x16 (24 GB/s) is Simple's 8.4 + 6 × 5.7 + 1.5 × 8e6 ÷
// 24e3 µs; 1 KB between 2 is LL's 6.6 + 2 × 1.0 + 1e3 ÷ 12e3 µs.
func TestNCCLRing_HandWorked(t *testing.T) {
	if g := 16 * ncclPCIeLaneGBs(4); g != 24 {
		t.Fatalf("PCIe Gen4 x16 = %v GB/s, want NCCL's 24", g)
	}
	if g := 16 * ncclPCIeLaneGBs(3); g != 12 {
		t.Fatalf("PCIe Gen3 x16 = %v GB/s, want NCCL's PCI_BW 12", g)
	}
	for _, c := range []struct {
		bytes float64
		n     int
		want  float64 // ms
	}{
		{8e6, 4, (8.4 + 6*5.7 + 1.5*8e6/24e3) / 1e3},
		{1e3, 2, (6.6 + 2*1.0 + 1e3/12e3) / 1e3},
	} {
		if got := ncclRingMs(c.bytes, c.n, 24); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("ncclRingMs(%v, %d) = %v ms, want %v", c.bytes, c.n, got, c.want)
		}
	}
}

// The PCIe model is checked against the one measured L40S row it should
// describe: aiconfigurator's 2 GPUs (which reach ≈ 20 GB/s, so share a
// switch or socket). Its 4 and 8 GPU rows cross sockets (≈ 5 and 1 GB/s
// bus bandwidth), which a PCIe switch beats several times.
func TestPCIeAllReduce_AgainstMeasuredL40S(t *testing.T) {
	tf, err := loadTables("l40s")
	if err != nil {
		t.Fatal(err)
	}
	ft, _ := tf.framework("trtllm")
	g, _ := Lookup("l40s")
	for _, tp := range []int{2, 4, 8} {
		meas := arCurve(ft.AllReduce, tp)
		pcie, err := pcieAllReduceCurve(g, tp)
		if err != nil {
			t.Fatal(err)
		}
		for _, elems := range []float64{1 << 20, 4 << 20, 16 << 20} {
			m, p := meas.at(elems), pcie.at(elems)
			switch r := m / p; {
			case tp == 2 && (r < 0.8 || r > 1.25):
				t.Errorf("TP 2, %v elements: measured %.3f ms, NCCL PCIe model %.3f ms: more than 25 %% apart", elems, m, p)
			case tp > 2 && r < 2:
				t.Errorf("TP %d, %v elements: measured (cross-socket) %.3f ms, PCIe switch %.3f ms: want the switch ≥ 2× faster", tp, elems, m, p)
			}
		}
	}
}

// --gpu-interconnect pcie changes only the all-reduces: a TP 1 pass is
// unchanged, a TP 4 pass of 70B on L40S gets faster (the measured table's
// 4 GPUs cross sockets), and its all-reduce share equals the formula's.
func TestPCIeInterconnect_PassPrice(t *testing.T) {
	s8 := known(t, "meta-llama/Llama-3.1-8B-Instruct")
	s70 := known(t, "meta-llama/Llama-3.1-70B-Instruct")
	pc := &engine.PassContents{Decodes: 128, DecodeCtxSum: 128 * 1000}
	a := mustNew(t, Options{GPU: "l40s", Shape: s8, EngineType: "trtllm", Quantization: "fp8"})
	b := mustNew(t, Options{GPU: "l40s", Shape: s8, EngineType: "trtllm", Quantization: "fp8", Interconnect: InterconnectPCIe})
	if x, y := a.PassMs(pc), b.PassMs(pc); x != y {
		t.Errorf("TP 1: measured %v ms, pcie %v ms; want equal (no all-reduce)", x, y)
	}
	meas := mustNew(t, Options{GPU: "l40s", Shape: s70, TP: 4, EngineType: "trtllm", Quantization: "fp8"})
	pcie := mustNew(t, Options{GPU: "l40s", Shape: s70, TP: 4, EngineType: "trtllm", Quantization: "fp8", Interconnect: InterconnectPCIe})
	x, y := meas.PassMs(pc), pcie.PassMs(pc)
	if !(y < x) {
		t.Errorf("70B TP 4 decode of 128: pcie %.2f ms, measured %.2f ms; want pcie faster", y, x)
	}
	// Two all-reduces per layer of 128 × 8192 bfloat16 elements.
	wantAR := float64(2*s70.Layers) * ncclRingMs(2*128*float64(s70.Hidden), 4, 24)
	gotAR := float64(2*s70.Layers) * pcie.ar.at(128*float64(s70.Hidden))
	if math.Abs(gotAR-wantAR) > 0.01*wantAR {
		t.Errorf("all-reduces of the pass: curve %.3f ms, formula %.3f ms", gotAR, wantAR)
	}
	if d := (x - y) - (float64(2*s70.Layers)*meas.ar.at(128*float64(s70.Hidden)) - gotAR); math.Abs(d) > 1e-6*x {
		t.Errorf("the two passes differ by more than their all-reduces (%.6f ms)", d)
	}
}

func TestParseInterconnect(t *testing.T) {
	for in, want := range map[string]Interconnect{"": InterconnectMeasured, "measured": InterconnectMeasured, "PCIe": InterconnectPCIe} {
		if got, err := ParseInterconnect(in); err != nil || got != want {
			t.Errorf("ParseInterconnect(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseInterconnect("nvlink5"); err == nil {
		t.Error("ParseInterconnect(nvlink5): no error")
	}
}
