package hardware

import (
	"bytes"
	"compress/gzip"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

//go:embed data/*.json.gz
var dataFS embed.FS

// tableFile is one GPU's derived tables, as internal/hardware/gen writes
// them (ms latencies; 0 = not measured).
type tableFile struct {
	GPU    string `json:"gpu"`
	Source struct {
		Repository string   `json:"repository"`
		Commit     string   `json:"commit"`
		Paths      []string `json:"paths"`
	} `json:"source"`
	Frameworks map[string]*frameworkTables `json:"frameworks"`
}

type frameworkTables struct {
	Versions  map[string]string    `json:"versions"`
	GEMM      map[string]*gemmGrid `json:"gemm"`
	Context   []*attnGrid          `json:"context_attention"`
	Gen       []*attnGrid          `json:"generation_attention"`
	AllReduce *arGrid              `json:"allreduce"`
	MoE       []*moeSeries         `json:"moe"`
}

type gemmGrid struct {
	M  []int     `json:"m"`
	N  []int     `json:"n"`
	K  []int     `json:"k"`
	Ms []float32 `json:"ms"`
}

func (g *gemmGrid) at(i, j, l int) float64 {
	return float64(g.Ms[(i*len(g.N)+j)*len(g.K)+l])
}

type attnGrid struct {
	Heads   int       `json:"heads"`
	KVHeads int       `json:"kv_heads"`
	HeadDim int       `json:"head_dim"`
	KVDtype string    `json:"kv_dtype"`
	Batch   []int     `json:"batch"`
	Len     []int     `json:"len"`
	Ms      []float32 `json:"ms"`
}

type arGrid struct {
	Kernel string    `json:"kernel"`
	GPUs   []int     `json:"gpus"`
	Elems  []int     `json:"elems"`
	Ms     []float32 `json:"ms"`
}

type moeSeries struct {
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

var (
	tableMu    sync.Mutex
	tableCache = map[string]*tableFile{}
)

// loadTables reads and caches a GPU's embedded tables. The result is
// shared and must not be modified.
func loadTables(name string) (*tableFile, error) {
	tableMu.Lock()
	defer tableMu.Unlock()
	if t, ok := tableCache[name]; ok {
		return t, nil
	}
	raw, err := dataFS.ReadFile("data/" + name + ".json.gz")
	if err != nil {
		return nil, fmt.Errorf("operator tables for %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("operator tables for %s: %w", name, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("operator tables for %s: %w", name, err)
	}
	var t tableFile
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("operator tables for %s: %w", name, err)
	}
	tableCache[name] = &t
	return &t, nil
}

// framework picks the tables of an engine type; an engine without its own
// falls back to vllm's, then to any.
func (t *tableFile) framework(fw string) (*frameworkTables, string) {
	if x, ok := t.Frameworks[fw]; ok {
		return x, fw
	}
	if x, ok := t.Frameworks["vllm"]; ok {
		return x, "vllm"
	}
	for _, k := range sortedKeys(t.Frameworks) {
		return t.Frameworks[k], k
	}
	return nil, ""
}
