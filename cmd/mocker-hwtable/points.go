package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Metric names a published figure.
type Metric string

// The metrics a point can carry.
const (
	MetricTTFT            Metric = "ttft_ms"              // time to first token
	MetricITL             Metric = "itl_ms"               // AIPerf's ITL: (E2E − TTFT) / (output tokens − 1)
	MetricTPOT            Metric = "tpot_ms"              // vLLM's TPOT: the same quantity, vLLM's name
	MetricOutputTokS      Metric = "output_tok_s"         // output tokens/s over all the deployment's GPUs
	MetricOutputTokSPerGP Metric = "output_tok_s_per_gpu" // output tokens/s per GPU
	MetricE2E             Metric = "e2e_ms"               // request latency, arrival to last token
	// MetricGap is every gap between consecutive tokens of every request,
	// pooled: what vLLM's and SGLang's bench_serving call ITL.
	MetricGap Metric = "gap_ms"
)

// Family groups metrics into the error table's columns.
type Family string

// The error table's metric families, in column order.
const (
	FamilyITL        Family = "TPOT/ITL"
	FamilyTTFT       Family = "TTFT"
	FamilyThroughput Family = "output throughput"
	FamilyE2E        Family = "E2E latency"
)

// Families lists the families in column order.
var Families = []Family{FamilyITL, FamilyTTFT, FamilyThroughput, FamilyE2E}

var metricFamily = map[Metric]Family{
	MetricTTFT: FamilyTTFT, MetricITL: FamilyITL, MetricTPOT: FamilyITL,
	MetricOutputTokS: FamilyThroughput, MetricOutputTokSPerGP: FamilyThroughput, MetricE2E: FamilyE2E,
	MetricGap: FamilyITL,
}

// Load says how the source loaded the server.
type Load string

// Loads.
const (
	// LoadClosed is a closed loop of Concurrency clients.
	LoadClosed Load = "closed"
	// LoadMax is a maximum-throughput run: every request queued at once.
	// It is replayed as a closed loop with as many clients as requests.
	LoadMax Load = "max"
	// LoadRate is an open loop: Requests requests arriving at Rate per
	// second, replayed with Poisson arrivals (replay's synthetic workload).
	LoadRate Load = "rate"
)

// weightFlags maps a point's weight precision to replay's flags.
var weightFlags = map[string][]string{
	"bf16":  {"--dtype", "bfloat16"},
	"fp16":  {"--dtype", "float16"},
	"fp8":   {"--quantization", "fp8"},
	"nvfp4": {"--quantization", "modelopt_fp4"},
}

// Point is one published measurement.
type Point struct {
	ID, Source, Table string
	Model, GPU        string
	TP                int
	Weights, KVDType  string
	Engine            string
	// ISL and OSL are the prompt and output lengths in replay's
	// --input-len syntax: N, or uniform:MIN:MAX for a benchmark's random
	// lengths (SGLang's bench_serving draws uniformly from [1, N]); or
	// both trace:FILE, the per-request lengths of the source's run.
	ISL, OSL string
	// Trace is the path of the trace file of a trace:FILE point, resolved
	// against the points file's directory; empty for a synthetic point.
	Trace       string
	Load        Load
	Concurrency int
	// Rate is the arrival rate in requests/s of a LoadRate point.
	Rate float64
	// Requests is the number of requests the source sent; 0 when it does
	// not say (the table then picks a number, see Options).
	Requests  int
	Metric    Metric
	Statistic string // mean, median or total
	Value     float64
	// Args are extra serve flags for this point (space separated in the
	// file), e.g. an engine setting the source states.
	Args []string
}

// columns are the file's header, in order.
var columns = []string{"id", "source", "table", "model", "gpu", "tp", "weights", "kv_dtype", "engine",
	"isl", "osl", "load", "concurrency", "rate", "requests", "metric", "statistic", "value", "args"}

// ReadPoints reads and checks the points file. Any bad row is an error
// naming its line; a file with no points is an error.
func ReadPoints(r io.Reader, name string) ([]Point, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(columns)
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	if strings.Join(header, ",") != strings.Join(columns, ",") {
		return nil, fmt.Errorf("%s: header is %q, want %q", name, strings.Join(header, ","), strings.Join(columns, ","))
	}
	var points []Point
	ids := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p, err := parsePoint(rec, filepath.Dir(name))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if ids[p.ID] {
			return nil, fmt.Errorf("%s:%d: duplicate id %q", name, line, p.ID)
		}
		ids[p.ID] = true
		points = append(points, p)
	}
	if len(points) == 0 {
		return nil, fmt.Errorf("%s: no points", name)
	}
	return points, nil
}

// columnIndex maps a column name to its position in a record.
var columnIndex = func() map[string]int {
	m := make(map[string]int, len(columns))
	for i, c := range columns {
		m[c] = i
	}
	return m
}()

// tracePrefix marks a point whose lengths are a trace file's, request by
// request: a benchmark over a dataset (ShareGPT) that recorded every
// request's prompt and output length.
const tracePrefix = "trace:"

// parsePoint parses one record; dir is the points file's directory, which
// a trace:FILE length is relative to.
func parsePoint(rec []string, dir string) (Point, error) {
	f := func(col string) string { return strings.TrimSpace(rec[columnIndex[col]]) }
	var errs []error
	positive := func(col string, optional bool) int {
		s := f(col)
		if s == "" && optional {
			return 0
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s must be an integer ≥ 1, got %q", col, s))
		}
		return n
	}
	p := Point{ID: f("id"), Source: f("source"), Table: f("table"), Model: f("model"), GPU: f("gpu"),
		Weights: f("weights"), KVDType: f("kv_dtype"), Engine: f("engine"), Load: Load(f("load")),
		Metric: Metric(f("metric")), Statistic: f("statistic"), Args: strings.Fields(f("args"))}
	p.TP = positive("tp", false)
	p.ISL, p.OSL = f("isl"), f("osl")
	p.Concurrency = positive("concurrency", p.Load != LoadClosed)
	p.Requests = positive("requests", true)
	if file, ok := strings.CutPrefix(p.ISL, tracePrefix); ok || strings.HasPrefix(p.OSL, tracePrefix) {
		errs = append(errs, checkTrace(&p, file, dir)...)
	} else {
		for col, v := range map[string]string{"isl": p.ISL, "osl": p.OSL} {
			if !validLength(v) {
				errs = append(errs, fmt.Errorf("%s must be N, uniform:MIN:MAX with 1 ≤ MIN ≤ MAX or trace:FILE, got %q", col, v))
			}
		}
	}
	if s := f("rate"); s != "" {
		r, err := strconv.ParseFloat(s, 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			errs = append(errs, fmt.Errorf("rate must be a number > 0, got %q", s))
		}
		p.Rate = r
	}
	v, err := strconv.ParseFloat(f("value"), 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		errs = append(errs, fmt.Errorf("value must be a number > 0, got %q", f("value")))
	}
	p.Value = v
	if p.ID == "" || p.Source == "" || p.Model == "" || p.GPU == "" {
		errs = append(errs, errors.New("id, source, model and gpu are required"))
	}
	if _, ok := weightFlags[p.Weights]; !ok {
		errs = append(errs, fmt.Errorf("weights %q is not one of bf16, fp16, fp8, nvfp4", p.Weights))
	}
	if p.KVDType != "auto" && p.KVDType != "fp8" {
		errs = append(errs, fmt.Errorf("kv_dtype %q is not auto or fp8", p.KVDType))
	}
	if p.Engine != "vllm" && p.Engine != "sglang" && p.Engine != "trtllm" {
		errs = append(errs, fmt.Errorf("engine %q is not vllm, sglang or trtllm", p.Engine))
	}
	switch p.Load {
	case LoadClosed, LoadMax:
		if p.Rate != 0 {
			errs = append(errs, fmt.Errorf("a %s point has no rate", p.Load))
		}
	case LoadRate:
		if p.Rate == 0 || p.Requests == 0 {
			errs = append(errs, errors.New("a rate point needs its rate and its number of requests"))
		}
	default:
		errs = append(errs, fmt.Errorf("load %q is not closed, max or rate", p.Load))
	}
	if _, ok := metricFamily[p.Metric]; !ok {
		errs = append(errs, fmt.Errorf("metric %q is unknown", p.Metric))
	}
	switch {
	case p.Statistic == "total" && (p.Metric == MetricOutputTokS || p.Metric == MetricOutputTokSPerGP):
	case (p.Statistic == "mean" || p.Statistic == "median") && p.Metric != MetricOutputTokS && p.Metric != MetricOutputTokSPerGP:
	default:
		errs = append(errs, fmt.Errorf("statistic %q does not fit metric %q (throughputs are total, latencies mean or median)", p.Statistic, p.Metric))
	}
	if p.Load == LoadMax && p.Requests == 0 {
		errs = append(errs, errors.New("a max-throughput point needs its number of requests"))
	}
	return p, errors.Join(errs...)
}

// checkTrace checks a trace:FILE point and sets its Trace: both lengths
// name the same file, which exists; every request is queued at once (the
// file's timestamps say when, and a benchmark at request rate "inf" sends
// them all at once), as many as the point's requests and concurrency.
func checkTrace(p *Point, file, dir string) []error {
	var errs []error
	if p.ISL != p.OSL || file == "" {
		errs = append(errs, fmt.Errorf("a trace point has isl and osl both trace:FILE, the same file; got %q and %q", p.ISL, p.OSL))
	}
	if p.Load != LoadMax || p.Requests == 0 || p.Concurrency != p.Requests {
		errs = append(errs, errors.New("a trace point is load max with concurrency = requests = the trace's requests"))
	}
	if file == "" {
		return errs
	}
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, file)
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		errs = append(errs, fmt.Errorf("trace %q: not a readable file (relative to the points file's directory)", file))
	}
	p.Trace = path
	return errs
}

// validLength reports whether s is a length N ≥ 1 or uniform:MIN:MAX with
// 1 ≤ MIN ≤ MAX, the forms of replay's --input-len the points use.
func validLength(s string) bool {
	if n, err := strconv.Atoi(s); err == nil {
		return n >= 1
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 || parts[0] != "uniform" {
		return false
	}
	lo, err1 := strconv.Atoi(parts[1])
	hi, err2 := strconv.Atoi(parts[2])
	return err1 == nil && err2 == nil && lo >= 1 && lo <= hi
}
