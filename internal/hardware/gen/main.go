// Command gen derives the compact operator tables of internal/hardware/data
// from a checkout of ai-dynamo/aiconfigurator (Apache-2.0): its per-GPU,
// per-backend perf databases under
// aic-core/src/aiconfigurator_core/systems/data/<gpu>/<op>/<framework>/<version>/*.parquet.
//
// It is its own Go module so that the server does not depend on a Parquet
// reader; nothing of aiconfigurator's code is used, only its measured data.
//
//	cd internal/hardware/gen
//	go run . -snapshot /path/to/aiconfigurator -commit <sha> -out ../data
//
// For every GPU and framework (vllm, sglang, trtllm) it takes the newest
// version directory that holds a table and keeps:
//
//   - GEMM latency for bfloat16, fp8 (per-tensor scaled) and nvfp4 on the table's
//     m × n × k grid, m restricted to the powers of two, n and k ≥ 128;
//   - context and generation attention (bfloat16 compute, beam 1, no
//     sliding window) for head_dim 64, 128 and 256 and query-head counts
//     4, 8, 16, 32 and 64, per (heads, KV heads,
//     head_dim, KV cache dtype) a batch × length grid;
//   - the fused MoE layer with the power-law routing aiconfigurator models
//     by default (alpha 1.01 and 1.2; no expert parallelism) for
//     bfloat16, fp8, fp8_block and nvfp4 by (hidden, expert width, top-k,
//     experts, TP) over the token count;
//   - the framework's custom all-reduce (CUDA-graph variant, bfloat16) by
//     GPU count and message size, or NCCL's all_reduce where the framework
//     has none.
//
// Latencies are rounded to 4 significant digits. Where the table holds two
// kernels for one point the faster one is kept.
package main

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// gpus are the systems with measured tables that the catalogue names.
// The others in internal/hardware's catalogue borrow the efficiencies of
// one of these (a roofline), which keeps the embedded data small.
var gpus = []string{"h100_sxm", "h200_sxm", "b200_sxm", "gb200", "a100_sxm", "l40s"}

// attnHeads are the query-head counts kept from the attention tables (with
// every KV-head count measured for them); the model scales the nearest one
// by its head count (internal/hardware/attention.go).
var attnHeads = map[int]bool{4: true, 8: true, 16: true, 32: true, 64: true}

var frameworks = []string{"vllm", "sglang", "trtllm"}

const dataRel = "aic-core/src/aiconfigurator_core/systems/data"

// File is one GPU's derived tables (the JSON written per GPU).
type File struct {
	GPU        string                `json:"gpu"`
	Source     Source                `json:"source"`
	Frameworks map[string]*Framework `json:"frameworks"`
}

// Source names what the tables were derived from.
type Source struct {
	Repository string   `json:"repository"`
	Commit     string   `json:"commit"`
	Licence    string   `json:"licence"`
	Paths      []string `json:"paths"`
}

// Framework holds one backend's tables.
type Framework struct {
	Versions  map[string]string `json:"versions"` // op -> version directory used
	GEMM      map[string]*GEMM  `json:"gemm"`     // dtype -> table
	Context   []*Attention      `json:"context_attention"`
	Gen       []*Attention      `json:"generation_attention"`
	AllReduce *AllReduce        `json:"allreduce,omitempty"`
	MoE       []*MoE            `json:"moe,omitempty"`
}

// MoE is the latency in ms of one layer's fused routed experts for one
// expert configuration and routing distribution (power_law_1.01 or
// power_law_1.2, the ones aiconfigurator models by default; no expert
// parallelism) by the number of tokens; 0 = not measured.
type MoE struct {
	Distribution string    `json:"distribution"`
	Dtype        string    `json:"dtype"`
	Hidden       int       `json:"hidden"`
	Inter        int       `json:"inter"`
	TopK         int       `json:"topk"`
	Experts      int       `json:"experts"`
	TP           int       `json:"tp"`
	Tokens       []int     `json:"tokens"`
	Ms           []float32 `json:"ms"`
}

// GEMM is latency in ms over m × n × k, flattened m-major; 0 = not measured.
type GEMM struct {
	M  []int     `json:"m"`
	N  []int     `json:"n"`
	K  []int     `json:"k"`
	Ms []float32 `json:"ms"`
}

// Attention is latency in ms of one layer's attention for one head
// configuration over batch × length (prompt length for context attention,
// KV length for generation), flattened batch-major; 0 = not measured.
type Attention struct {
	Heads   int       `json:"heads"`
	KVHeads int       `json:"kv_heads"`
	HeadDim int       `json:"head_dim"`
	KVDtype string    `json:"kv_dtype"`
	Batch   []int     `json:"batch"`
	Len     []int     `json:"len"`
	Ms      []float32 `json:"ms"`
}

// AllReduce is latency in ms over GPU count × message size in elements
// (bfloat16), flattened GPU-count-major; 0 = not measured.
type AllReduce struct {
	Kernel string    `json:"kernel"`
	GPUs   []int     `json:"gpus"`
	Elems  []int     `json:"elems"`
	Ms     []float32 `json:"ms"`
}

func main() {
	snap := flag.String("snapshot", "", "aiconfigurator checkout (the directory holding aic-core/)")
	commit := flag.String("commit", "", "the snapshot's git commit, recorded in the output")
	out := flag.String("out", "../data", "output directory")
	flag.Parse()
	if *snap == "" || *commit == "" {
		log.Fatal("usage: gen -snapshot DIR -commit SHA [-out DIR]")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, g := range gpus {
		f, err := buildGPU(filepath.Join(*snap, dataRel), g, *commit)
		if err != nil {
			log.Fatalf("%s: %v", g, err)
		}
		if err := write(filepath.Join(*out, g+".json.gz"), f); err != nil {
			log.Fatal(err)
		}
	}
}

func buildGPU(root, gpu, commit string) (*File, error) {
	f := &File{GPU: gpu, Frameworks: map[string]*Framework{}, Source: Source{
		Repository: "https://github.com/ai-dynamo/aiconfigurator", Commit: commit, Licence: "Apache-2.0",
	}}
	for _, fw := range frameworks {
		x := &Framework{Versions: map[string]string{}, GEMM: map[string]*GEMM{}}
		if p, v := newest(root, gpu, "gemm", fw, "gemm_perf.parquet"); p != "" {
			rows, err := readRows(p)
			if err != nil {
				return nil, err
			}
			for _, dt := range []string{"bfloat16", "fp8", "nvfp4"} {
				if g := gemmTable(rows, dt); g != nil {
					x.GEMM[dt] = g
				}
			}
			x.Versions["gemm"] = v
			f.Source.Paths = append(f.Source.Paths, rel(root, p))
		}
		for _, op := range []string{"context", "generation"} {
			p, v := newest(root, gpu, "attention", fw, op+"_attention_perf.parquet")
			if p == "" {
				continue
			}
			rows, err := readRows(p)
			if err != nil {
				return nil, err
			}
			t := attentionTables(rows, op == "generation")
			if op == "context" {
				x.Context = t
			} else {
				x.Gen = t
			}
			x.Versions[op+"_attention"] = v
			f.Source.Paths = append(f.Source.Paths, rel(root, p))
		}
		if p, v := newest(root, gpu, "comm", fw, "custom_allreduce_perf.parquet"); p != "" {
			rows, err := readRows(p)
			if err != nil {
				return nil, err
			}
			if ar := allReduce(rows, "all_reduce", true); ar != nil {
				x.AllReduce = ar
				x.Versions["allreduce"] = v
				f.Source.Paths = append(f.Source.Paths, rel(root, p))
			}
		}
		// The newest MoE table may cover only a new kernel (TensorRT-LLM
		// 1.3.0rc23 on Blackwell measured MXFP4 alone): take the newest one
		// with bfloat16 rows.
		for _, v := range versions(root, gpu, "moe", fw, "moe_perf.parquet") {
			p := filepath.Join(root, gpu, "moe", fw, v, "moe_perf.parquet")
			rows, err := readRows(p)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(rows, func(r row) bool { return r.s["moe_dtype"] == "bfloat16" }) {
				continue
			}
			x.MoE = moeTables(rows)
			x.Versions["moe"] = v
			f.Source.Paths = append(f.Source.Paths, rel(root, p))
			break
		}
		if x.AllReduce == nil {
			if p, v := newest(root, gpu, "comm", "nccl", "nccl_perf.parquet"); p != "" {
				rows, err := readRows(p)
				if err != nil {
					return nil, err
				}
				if ar := allReduce(rows, "all_reduce", false); ar != nil {
					x.AllReduce = ar
					x.Versions["allreduce"] = "nccl " + v
					f.Source.Paths = append(f.Source.Paths, rel(root, p))
				}
			}
		}
		if len(x.GEMM) > 0 && len(x.Context) > 0 && len(x.Gen) > 0 {
			f.Frameworks[fw] = x
		}
	}
	if len(f.Frameworks) == 0 {
		return nil, errors.New("no framework has GEMM and attention tables")
	}
	sort.Strings(f.Source.Paths)
	f.Source.Paths = slices.Compact(f.Source.Paths)
	return f, nil
}

func rel(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil {
		return p
	}
	return dataRel + "/" + filepath.ToSlash(r)
}

// newest returns the newest version directory of gpu/op/fw holding name.
func newest(root, gpu, op, fw, name string) (path, version string) {
	vs := versions(root, gpu, op, fw, name)
	if len(vs) == 0 {
		return "", ""
	}
	return filepath.Join(root, gpu, op, fw, vs[0], name), vs[0]
}

// versions lists the version directories of gpu/op/fw holding name,
// newest first.
func versions(root, gpu, op, fw, name string) []string {
	dir := filepath.Join(root, gpu, op, fw)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var vs []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), name)); err == nil {
			vs = append(vs, e.Name())
		}
	}
	slices.SortFunc(vs, func(a, b string) int { return compareVersion(b, a) })
	return vs
}

// compareVersion orders "0.5.6.post2" < "0.5.9" < "0.5.10" and
// "1.2.0rc5" < "1.3.0rc10": numbers compare as numbers, the rest as text.
func compareVersion(a, b string) int {
	ta, tb := tokens(a), tokens(b)
	for i := 0; i < len(ta) && i < len(tb); i++ {
		na, ea := strconv.Atoi(ta[i])
		nb, eb := strconv.Atoi(tb[i])
		switch {
		case ea == nil && eb == nil:
			if na != nb {
				return na - nb
			}
		default:
			if c := strings.Compare(ta[i], tb[i]); c != 0 {
				return c
			}
		}
	}
	return len(ta) - len(tb)
}

func tokens(s string) []string {
	var out []string
	cur := ""
	digit := false
	for i, r := range s {
		d := r >= '0' && r <= '9'
		if i > 0 && d != digit || r == '.' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
		}
		digit = d
		if r != '.' {
			cur += string(r)
		}
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

// row is one table row by column name: strings and numbers.
type row struct {
	s map[string]string
	n map[string]float64
}

func readRows(path string) ([]row, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fields := pf.Schema().Fields()
	var out []row
	buf := make([]parquet.Row, 512)
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		for {
			n, err := rows.ReadRows(buf)
			for _, pr := range buf[:n] {
				r := row{s: map[string]string{}, n: map[string]float64{}}
				for _, v := range pr {
					if v.IsNull() {
						continue
					}
					name := fields[v.Column()].Name()
					switch v.Kind() {
					case parquet.ByteArray:
						r.s[name] = string(v.ByteArray())
					case parquet.Int64:
						r.n[name] = float64(v.Int64())
					case parquet.Int32:
						r.n[name] = float64(v.Int32())
					case parquet.Double:
						r.n[name] = v.Double()
					case parquet.Float:
						r.n[name] = float64(v.Float())
					}
				}
				out = append(out, r)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		rows.Close()
	}
	return out, nil
}

func round4(v float64) float32 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 32)
	return float32(r)
}

func isPow2(x int) bool { return x > 0 && x&(x-1) == 0 }

// keepMin records v at key, keeping the smaller latency.
func keepMin(m map[[3]int]float64, k [3]int, v float64) {
	if old, ok := m[k]; !ok || v < old {
		m[k] = v
	}
}

func axis(set map[int]bool) []int {
	out := make([]int, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Ints(out)
	return out
}

func gemmTable(rows []row, dtype string) *GEMM {
	pts := map[[3]int]float64{}
	ms, ns, ks := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for _, r := range rows {
		if r.s["gemm_dtype"] != dtype || r.n["latency"] <= 0 {
			continue
		}
		m, n, k := int(r.n["m"]), int(r.n["n"]), int(r.n["k"])
		if !isPow2(m) || n < 128 || k < 128 {
			continue
		}
		keepMin(pts, [3]int{m, n, k}, r.n["latency"])
		ms[m], ns[n], ks[k] = true, true, true
	}
	if len(pts) == 0 {
		return nil
	}
	g := &GEMM{M: axis(ms), N: axis(ns), K: axis(ks)}
	g.Ms = make([]float32, len(g.M)*len(g.N)*len(g.K))
	for i, m := range g.M {
		for j, n := range g.N {
			for l, k := range g.K {
				g.Ms[(i*len(g.N)+j)*len(g.K)+l] = round4(pts[[3]int{m, n, k}])
			}
		}
	}
	return g
}

func attentionTables(rows []row, generation bool) []*Attention {
	type key struct {
		heads, kv, dim int
		kvDtype        string
	}
	groups := map[key]map[[3]int]float64{}
	batches := map[key]map[int]bool{}
	lens := map[key]map[int]bool{}
	for _, r := range rows {
		if r.n["latency"] <= 0 || r.n["window_size"] != 0 || r.n["beam_width"] > 1 {
			continue
		}
		if dt := r.s["attn_dtype"]; dt != "" && dt != "bfloat16" {
			continue
		}
		if !attnHeads[int(r.n["num_heads"])] {
			continue
		}
		dim := int(r.n["head_dim"])
		if dim != 64 && dim != 128 && dim != 256 {
			continue
		}
		kvd := r.s["kv_cache_dtype"]
		if kvd != "bfloat16" && kvd != "fp8" {
			continue
		}
		k := key{int(r.n["num_heads"]), int(r.n["num_key_value_heads"]), dim, kvd}
		b := int(r.n["batch_size"])
		l := int(r.n["isl"])
		if generation {
			// A generation step attends over isl + step tokens.
			l = int(r.n["isl"] + r.n["step"])
		}
		if groups[k] == nil {
			groups[k], batches[k], lens[k] = map[[3]int]float64{}, map[int]bool{}, map[int]bool{}
		}
		keepMin(groups[k], [3]int{b, l}, r.n["latency"])
		batches[k][b], lens[k][l] = true, true
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.dim != b.dim {
			return a.dim < b.dim
		}
		if a.kvDtype != b.kvDtype {
			return a.kvDtype < b.kvDtype
		}
		if a.heads != b.heads {
			return a.heads < b.heads
		}
		return a.kv < b.kv
	})
	var out []*Attention
	for _, k := range keys {
		a := &Attention{Heads: k.heads, KVHeads: k.kv, HeadDim: k.dim, KVDtype: k.kvDtype,
			Batch: axis(batches[k]), Len: axis(lens[k])}
		a.Ms = make([]float32, len(a.Batch)*len(a.Len))
		for i, b := range a.Batch {
			for j, l := range a.Len {
				a.Ms[i*len(a.Len)+j] = round4(groups[k][[3]int{b, l}])
			}
		}
		out = append(out, a)
	}
	return out
}

func allReduce(rows []row, op string, custom bool) *AllReduce {
	pts := map[[3]int]float64{}
	gs, es := map[int]bool{}, map[int]bool{}
	kernel := ""
	for _, r := range rows {
		if r.s["op_name"] != op || r.n["latency"] <= 0 {
			continue
		}
		if custom {
			if dt := r.s["allreduce_dtype"]; dt != "bfloat16" {
				continue
			}
			// The CUDA-graph variant is what serving engines replay; the
			// eager one is only used outside graphs.
			if strings.Contains(strings.ToLower(r.s["kernel_source"]+r.s["backend"]), "eager") {
				continue
			}
		} else if dt := r.s["nccl_dtype"]; dt != "half" && dt != "bfloat16" {
			continue
		}
		g, e := int(r.n["num_gpus"]), int(r.n["message_size"])
		keepMin(pts, [3]int{g, e}, r.n["latency"])
		gs[g], es[e] = true, true
		if kernel == "" {
			kernel = r.s["kernel_source"]
		}
	}
	if len(pts) == 0 {
		return nil
	}
	a := &AllReduce{Kernel: kernel, GPUs: axis(gs), Elems: axis(es)}
	a.Ms = make([]float32, len(a.GPUs)*len(a.Elems))
	for i, g := range a.GPUs {
		for j, e := range a.Elems {
			a.Ms[i*len(a.Elems)+j] = round4(pts[[3]int{g, e}])
		}
	}
	return a
}

func moeTables(rows []row) []*MoE {
	type key struct {
		dist, dtype                      string
		hidden, inter, topk, experts, tp int
	}
	pts := map[key]map[[3]int]float64{}
	toks := map[key]map[int]bool{}
	for _, r := range rows {
		dist := r.s["distribution"]
		if r.n["latency"] <= 0 || r.n["moe_ep_size"] != 1 ||
			(dist != "power_law_1.01" && dist != "power_law_1.2") {
			continue
		}
		dt := r.s["moe_dtype"]
		if dt != "bfloat16" && dt != "fp8" && dt != "fp8_block" && dt != "nvfp4" {
			continue
		}
		k := key{dist, dt, int(r.n["hidden_size"]), int(r.n["inter_size"]), int(r.n["topk"]), int(r.n["num_experts"]), int(r.n["moe_tp_size"])}
		if pts[k] == nil {
			pts[k], toks[k] = map[[3]int]float64{}, map[int]bool{}
		}
		t := int(r.n["num_tokens"])
		keepMin(pts[k], [3]int{t}, r.n["latency"])
		toks[k][t] = true
	}
	keys := make([]key, 0, len(pts))
	for k := range pts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	var out []*MoE
	for _, k := range keys {
		m := &MoE{Distribution: k.dist, Dtype: k.dtype, Hidden: k.hidden, Inter: k.inter, TopK: k.topk, Experts: k.experts, TP: k.tp, Tokens: axis(toks[k])}
		for _, t := range m.Tokens {
			m.Ms = append(m.Ms, round4(pts[k][[3]int{t}]))
		}
		out = append(out, m)
	}
	return out
}

func write(path string, f *File) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(fh, gzip.BestCompression)
	// The gzip header carries no name and no time, so the output is
	// byte-identical across runs.
	enc := json.NewEncoder(zw)
	if err := enc.Encode(f); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return fh.Close()
}
