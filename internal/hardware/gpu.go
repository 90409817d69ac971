// Package hardware is the hardware timing model: a GPU catalogue, the
// operator latencies measured by NVIDIA's aiconfigurator (embedded,
// data/NOTICE), and a per-pass duration built from them for a model shape
// (internal/modelshape) at a tensor-parallel size, dtype and engine type.
// It also sizes the KV pool the real server would have. See
// docs/hardware.md for the formulas and every number's source.
package hardware

import (
	"fmt"
	"slices"
	"strings"
)

// GPU is one accelerator's datasheet numbers. Throughputs are dense (no
// sparsity), bandwidths one direction per GPU.
type GPU struct {
	Name string
	// MemBytes is the device memory as the driver reports it.
	MemBytes int64
	// MemBW is HBM (or GDDR) bandwidth in bytes/s.
	MemBW float64
	// BF16FLOPS, FP8FLOPS and FP4FLOPS are dense tensor-core throughputs
	// in FLOP/s; 0 on GPUs without that precision's tensor cores.
	BF16FLOPS float64
	FP8FLOPS  float64
	FP4FLOPS  float64
	// LinkBW is the GPU-to-GPU (NVLink, or PCIe) bandwidth in bytes/s.
	LinkBW float64
	// PCIeGen is the PCIe generation (x16) of a GPU whose GPUs talk over
	// PCIe; 0 for NVLink GPUs. --gpu-interconnect pcie uses it.
	PCIeGen int
	// Tables names the embedded operator tables (data/<Tables>.json.gz);
	// empty for a GPU without measurements.
	Tables string
	// BorrowFrom is the measured GPU whose operator efficiencies a GPU
	// without tables borrows (a roofline scaled by the ratio of the two
	// GPUs' rooflines).
	BorrowFrom string
	// Source is where the numbers come from.
	Source string
}

// catalogue: the numbers (FP4: fp4_tc_flops) are aiconfigurator's system files
// (aic-core/src/aiconfigurator_core/systems/<gpu>.yaml at the commit in
// data/NOTICE), which restate NVIDIA's datasheets; the Source field names
// the datasheet.
var catalogue = []GPU{
	{Name: "h100_sxm", MemBytes: 80 << 30, MemBW: 3.35e12, BF16FLOPS: 989e12, FP8FLOPS: 1978e12, LinkBW: 450e9, Tables: "h100_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/h100/ (H100 SXM: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS BF16 dense, NVLink 900 GB/s bidirectional)"},
	{Name: "h200_sxm", MemBytes: 141 << 30, MemBW: 4.8e12, BF16FLOPS: 989e12, FP8FLOPS: 1978e12, LinkBW: 450e9, Tables: "h200_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/h200/ (H200 SXM: 141 GB HBM3e, 4.8 TB/s, NVLink 900 GB/s bidirectional)"},
	{Name: "b200_sxm", MemBytes: 180 << 30, MemBW: 7.7e12, BF16FLOPS: 2250e12, FP8FLOPS: 4500e12, FP4FLOPS: 9000e12, LinkBW: 900e9, Tables: "b200_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/dgx-b200/ (B200: 180 GB HBM3e, 7.7 TB/s; 2.25 PFLOPS BF16 and 4.5 PFLOPS FP8 dense; NVLink 5 1.8 TB/s bidirectional)"},
	{Name: "gb200", MemBytes: 198674743296, MemBW: 8e12, BF16FLOPS: 2500e12, FP8FLOPS: 5000e12, FP4FLOPS: 10000e12, LinkBW: 900e9, Tables: "gb200",
		Source: "https://www.nvidia.com/en-us/data-center/gb200-nvl72/ (per Blackwell GPU of GB200: 186 GB HBM3e, 8 TB/s, 2.5 PFLOPS BF16 dense, NVLink 1.8 TB/s bidirectional)"},
	{Name: "a100_sxm", MemBytes: 80 << 30, MemBW: 2.039e12, BF16FLOPS: 312e12, LinkBW: 300e9, Tables: "a100_sxm",
		Source: "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (A100 80GB SXM: 2,039 GB/s, 312 TFLOPS BF16, NVLink 600 GB/s bidirectional, no FP8)"},
	{Name: "l40s", MemBytes: 45 << 30, MemBW: 864e9, BF16FLOPS: 362.05e12, FP8FLOPS: 733e12, LinkBW: 32e9, PCIeGen: 4, Tables: "l40s",
		Source: "https://www.nvidia.com/en-us/data-center/l40s/ (L40S: 48 GB GDDR6, 864 GB/s, 362 TFLOPS BF16 and 733 TFLOPS FP8 dense, PCIe Gen4 x16)"},
	{Name: "gh200", MemBytes: 96 << 30, MemBW: 4.0e12, BF16FLOPS: 989e12, FP8FLOPS: 1978e12, LinkBW: 450e9, BorrowFrom: "h100_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/ (GH200 96 GB: the H100 GPU with 96 GB HBM3 at 4 TB/s, 989 TFLOPS BF16 and 1979 TFLOPS FP8 dense; NVLink 900 GB/s bidirectional)"},
	{Name: "h100_pcie", MemBytes: 80 << 30, MemBW: 2.0e12, BF16FLOPS: 756.5e12, FP8FLOPS: 1513e12, LinkBW: 64e9, PCIeGen: 5, BorrowFrom: "h100_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/h100/ (H100 PCIe: 80 GB HBM2e, 2 TB/s, 756 TFLOPS BF16 dense)"},
	{Name: "a100_pcie", MemBytes: 80 << 30, MemBW: 1.935e12, BF16FLOPS: 312e12, LinkBW: 32e9, PCIeGen: 4, BorrowFrom: "a100_sxm",
		Source: "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf (A100 80GB PCIe: 1,935 GB/s, 312 TFLOPS BF16)"},
	{Name: "b300_sxm", MemBytes: 288400343040, MemBW: 7.75e12, BF16FLOPS: 2250e12, FP8FLOPS: 4500e12, FP4FLOPS: 14000e12, LinkBW: 900e9, BorrowFrom: "b200_sxm",
		Source: "https://www.nvidia.com/en-us/data-center/dgx-b300/ (B300: 288 GB HBM3e; aiconfigurator systems/b300_sxm.yaml)"},
	{Name: "gb300", MemBytes: 298013687808, MemBW: 8e12, BF16FLOPS: 2500e12, FP8FLOPS: 5000e12, FP4FLOPS: 15000e12, LinkBW: 900e9, BorrowFrom: "gb200",
		Source: "https://www.nvidia.com/en-us/data-center/gb300-nvl72/ (per Blackwell Ultra GPU: 288 GB HBM3e, 8 TB/s; aiconfigurator systems/gb300.yaml)"},
	{Name: "l4", MemBytes: 24 << 30, MemBW: 300e9, BF16FLOPS: 121e12, FP8FLOPS: 242e12, LinkBW: 32e9, PCIeGen: 4, BorrowFrom: "l40s",
		Source: "https://www.nvidia.com/en-us/data-center/l4/ (L4: 24 GB GDDR6, 300 GB/s, 121 TFLOPS BF16 and 242 TFLOPS FP8 dense)"},
}

// Lookup returns the catalogue entry of a GPU name (case-insensitive;
// "-" and "_" alike).
func Lookup(name string) (GPU, error) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "-", "_")
	for _, g := range catalogue {
		if g.Name == n {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("unknown GPU %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names lists the catalogue's GPU names.
func Names() []string {
	out := make([]string, 0, len(catalogue))
	for _, g := range catalogue {
		out = append(out, g.Name)
	}
	slices.Sort(out)
	return out
}

// Catalogue returns a copy of the GPU catalogue.
func Catalogue() []GPU { return slices.Clone(catalogue) }

// precision is a GEMM's weight (and tensor-core) precision.
type precision int

const (
	bf16 precision = iota // bfloat16 or float16
	fp8                   // FP8 (E4M3)
	fp4                   // NVFP4
)

// bytes is the size of one weight.
func (p precision) bytes() float64 {
	switch p {
	case fp8:
		return 1
	case fp4:
		return 0.5
	}
	return 2
}

// table is the GEMM table's dtype key.
func (p precision) table() string {
	switch p {
	case fp8:
		return "fp8"
	case fp4:
		return "nvfp4"
	}
	return "bfloat16"
}

// flops is the dense throughput at a precision (a lower one the GPU
// lacks falls back to the next higher).
func (g GPU) flops(p precision) float64 {
	if p == fp4 && g.FP4FLOPS > 0 {
		return g.FP4FLOPS
	}
	if p >= fp8 && g.FP8FLOPS > 0 {
		return g.FP8FLOPS
	}
	return g.BF16FLOPS
}
