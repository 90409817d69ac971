package hardware

import (
	"fmt"
	"math"
	"strings"
)

// Interconnect is how the tensor-parallel GPUs exchange their
// all-reduces.
type Interconnect string

const (
	// InterconnectMeasured prices all-reduces from the measured table of
	// the GPU's machine (aiconfigurator's, whatever its topology was).
	// It is the default ("" means it too).
	InterconnectMeasured Interconnect = "measured"
	// InterconnectPCIe prices them as NCCL's ring all-reduce among GPUs
	// behind one PCIe switch, at the catalogue's PCIe generation (x16),
	// with NCCL's own bandwidth and latency constants (ncclRingMs). For
	// GPUs whose GPU-to-GPU link is PCIe (L40S, L4, the PCIe cards).
	InterconnectPCIe Interconnect = "pcie"
)

// ParseInterconnect reads a --gpu-interconnect value ("" is measured).
func ParseInterconnect(s string) (Interconnect, error) {
	switch Interconnect(strings.ToLower(strings.TrimSpace(s))) {
	case "", InterconnectMeasured:
		return InterconnectMeasured, nil
	case InterconnectPCIe:
		return InterconnectPCIe, nil
	}
	return "", fmt.Errorf("unknown GPU interconnect %q (known: measured, pcie)", s)
}

// NCCL's tuning model (NVIDIA/nccl, src/graph/tuning.cc and topo.cc at
// commit 5067397c; docs/hardware.md). A ring all-reduce over n ranks
// takes nsteps = 2(n−1) steps; NCCL prices a protocol as
// baseLatency + nsteps × hwLatency + bytes ÷ algBW µs, with algBW =
// busBW × n ÷ nsteps. On PCIe it enables the LL and Simple protocols
// (LL128 only over NVLink), and LL moves half the bus bandwidth.
const (
	ncclRingLLBaseUs     = 6.6 // baseLatencies[Ring][LL]
	ncclRingSimpleBaseUs = 8.4 // baseLatencies[Ring][Simple]
	ncclPCIRingLLHwUs    = 1.0 // hwLatencies[PCI][Ring][LL]
	ncclPCIRingSimpleUs  = 5.7 // hwLatencies[PCI][Ring][Simple]
	ncclRingLLBWFactor   = 0.5 // "if (a == RING && p == LL) busBw *= .5"
)

// ncclPCIeLaneGBs is NCCL's bandwidth per PCIe lane by generation in
// GB/s: kvDictPciGen's 100 Mbit/s units (Gen3 60, Gen4 120, Gen5 240) ÷
// 80, so that Gen3 x16 is its PCI_BW of 12 GB/s.
func ncclPCIeLaneGBs(gen int) float64 {
	return 0.75 * math.Pow(2, float64(gen-3))
}

// ncclRingMs is NCCL's modelled time of a ring all-reduce of bytes among
// n ranks at bus bandwidth busGBs: the faster of its LL and Simple
// protocols, as NCCL's tuner picks.
func ncclRingMs(bytes float64, n int, busGBs float64) float64 {
	if n < 2 || bytes <= 0 {
		return 0
	}
	steps := float64(2 * (n - 1))
	share := steps / float64(n) * bytes / 1e3 // µs × GB/s
	ll := ncclRingLLBaseUs + steps*ncclPCIRingLLHwUs + share/(busGBs*ncclRingLLBWFactor)
	simple := ncclRingSimpleBaseUs + steps*ncclPCIRingSimpleUs + share/busGBs
	return min(ll, simple) / 1e3
}

// pcieAllReduceCurve is the all-reduce latency curve (bfloat16 elements
// → ms) of NCCL's ring over the GPU's PCIe generation, x16.
func pcieAllReduceCurve(g GPU, tp int) (curve, error) {
	if g.PCIeGen == 0 {
		return curve{}, fmt.Errorf("gpu interconnect pcie: %s's GPUs are not linked over PCIe (use measured)", g.Name)
	}
	bus := 16 * ncclPCIeLaneGBs(g.PCIeGen)
	// Powers of two from 64 elements to 2^30: the curve is exact at each
	// and, being affine in bytes per protocol, close between them.
	var c curve
	for e := 6; e <= 30; e++ {
		x := math.Ldexp(1, e)
		c.xs = append(c.xs, x)
		c.ys = append(c.ys, ncclRingMs(2*x, tp, bus))
	}
	return c, nil
}
