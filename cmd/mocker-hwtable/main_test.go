package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a fake `mocker-server`: with fakeEnv set it
// answers a replay command line with a report whose figures follow from the
// flags by the formulas of fakeSummary, so the table's arithmetic can be
// checked against numbers worked out here. Every call appends its command
// line to the file named by fakeLogEnv.
const (
	fakeEnv    = "MOCKER_HWTABLE_FAKE_REPLAY"
	fakeLogEnv = "MOCKER_HWTABLE_FAKE_LOG"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) == "1" {
		os.Exit(fakeReplay(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeFigures are the fake replay's answers for a configuration.
type fakeFigures struct {
	ttftMean, ttftP50, itlMean, itlP50, e2eMean, tokS, tokSPerGPU float64
}

// fakeSummary: TTFT = ISL/10 ms (median one more), ITL = 10 + C/10 ms
// (median half more), E2E = TTFT + (OSL−1)·ITL, throughput = C·OSL / E2E,
// per GPU ÷ TP.
// An open loop (no --concurrency) counts its rate as the concurrency.
func fakeSummary(isl, osl int, conc float64, tp int) fakeFigures {
	f := fakeFigures{ttftMean: float64(isl) / 10, itlMean: 10 + conc/10}
	f.ttftP50, f.itlP50 = f.ttftMean+1, f.itlMean+0.5
	f.e2eMean = f.ttftMean + float64(osl-1)*f.itlMean
	f.tokS = conc * float64(osl) / (f.e2eMean / 1000)
	f.tokSPerGPU = f.tokS / float64(tp)
	return f
}

func fakeReplay(args []string) int {
	if log := os.Getenv(fakeLogEnv); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, strings.Join(args, " "))
			f.Close()
		}
	}
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	var model, gpu, engine, quant, kv, dtype string
	var conc, requests, tp int
	var islS, oslS string
	var rate float64
	var arrival string
	var jsonOut, noProgress bool
	fs.Float64Var(&rate, "rate", 0, "")
	fs.StringVar(&arrival, "arrival", "", "")
	fs.StringVar(&model, "model", "", "")
	fs.StringVar(&gpu, "hardware", "", "")
	fs.StringVar(&engine, "engine-type", "", "")
	fs.StringVar(&quant, "quantization", "", "")
	fs.StringVar(&kv, "kv-cache-dtype", "", "")
	fs.StringVar(&dtype, "dtype", "", "")
	fs.StringVar(&islS, "input-len", "", "")
	fs.StringVar(&oslS, "output-len", "", "")
	fs.IntVar(&conc, "concurrency", 0, "")
	fs.IntVar(&requests, "requests", 0, "")
	fs.IntVar(&tp, "tensor-parallel-size", 1, "")
	fs.Int("max-num-seqs", 0, "")
	fs.Int("max-num-batched-tokens", 0, "")
	fs.Int("max-model-len", 0, "")
	fs.Duration("client-delay", 0, "")
	fs.BoolVar(&jsonOut, "json", false, "")
	fs.BoolVar(&noProgress, "no-progress", false, "")
	if len(args) == 0 || args[0] != "replay" || fs.Parse(args[1:]) != nil || !jsonOut {
		fmt.Fprintln(os.Stderr, "fake replay: bad command line")
		return 3
	}
	switch model {
	case "unknown/model":
		fmt.Fprintln(os.Stderr, "warning: something harmless")
		fmt.Fprintf(os.Stderr, "--model %s: unknown model (architecture | shape)\n", model)
		return 2
	case "slow/model":
		time.Sleep(10 * time.Second)
	case "crash/model":
		fmt.Fprintln(os.Stderr, "panic: boom")
		return 1
	}
	c := float64(conc)
	if conc == 0 {
		c = rate
	}
	// A uniform:MIN:MAX length counts as its upper bound.
	isl, osl := fakeLength(islS), fakeLength(oslS)
	if fs.NArg() == 1 {
		// A trace: its requests all at once, its longest lengths.
		var err error
		if requests, isl, osl, err = fakeTrace(fs.Arg(0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		c = float64(requests)
	}
	f := fakeSummary(isl, osl, c, tp)
	completed := requests
	if model == "reject/model" {
		completed = requests - 1
	}
	rep := map[string]any{"summary": map[string]any{
		"requests": requests, "completed": completed, "rejected": requests - completed, "unfinished": 0,
		"output_token_throughput": f.tokS, "output_token_throughput_per_gpu": f.tokSPerGPU,
		"ttft_ms":            map[string]float64{"mean": f.ttftMean, "p50": f.ttftP50},
		"itl_ms":             map[string]float64{"mean": f.itlMean, "p50": f.itlP50},
		"inter_token_gap_ms": map[string]float64{"mean": f.itlMean - 1, "p50": f.itlP50 - 1},
		"e2e_ms":             map[string]float64{"mean": f.e2eMean, "p50": f.e2eMean},
	}}
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return 1
	}
	return 0
}

// fakeTrace reads a trace: its number of requests and its longest input
// and output lengths.
func fakeTrace(path string) (n, isl, osl int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			In  int `json:"input_length"`
			Out int `json:"output_length"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return 0, 0, 0, err
		}
		n, isl, osl = n+1, max(isl, r.In), max(osl, r.Out)
	}
	return n, isl, osl, nil
}

func fakeLength(s string) int {
	n, err := strconv.Atoi(s[strings.LastIndex(s, ":")+1:])
	if err != nil {
		return 0
	}
	return n
}

// useFakeReplay points the table at this test binary as its replay and
// returns the file its command lines are logged to.
func useFakeReplay(t *testing.T) (bin, log string) {
	t.Helper()
	t.Setenv(fakeEnv, "1")
	log = filepath.Join(t.TempDir(), "calls.log")
	t.Setenv(fakeLogEnv, log)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return bin, log
}

const testHeader = "id,source,table,model,gpu,tp,weights,kv_dtype,engine,isl,osl,load,concurrency,rate,requests,metric,statistic,value,args\n"

func writePoints(t *testing.T, rows string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "points.csv")
	if err := os.WriteFile(path, []byte(testHeader+rows), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func ape(pred, pub float64) float64 { return 100 * math.Abs(pred-pub) / pub }

// TestTableAgainstFakeReplay runs the whole command on seven points over
// five configurations and checks every APE, the medians per slice, the
// replay command lines (one run per configuration) and the skipped rows.
func TestTableAgainstFakeReplay(t *testing.T) {
	bin, log := useFakeReplay(t)
	points := writePoints(t, ""+
		// Configuration A: closed loop C=10, no request count → max(100, 10×10) = 100 requests.
		"a1,s,t,m/one,h100_sxm,2,fp8,fp8,trtllm,1000,100,closed,10,,,ttft_ms,mean,125,\n"+
		"a2,s,t,m/one,h100_sxm,2,fp8,fp8,trtllm,1000,100,closed,10,,,itl_ms,mean,10,\n"+
		"a3,s,t,m/one,h100_sxm,2,fp8,fp8,trtllm,1000,100,closed,10,,,output_tok_s,total,800,\n"+
		// Configuration B: stated 8 requests, medians, a serve flag.
		"b1,s,t,m/two,h200_sxm,1,bf16,auto,vllm,200,50,closed,4,,8,ttft_ms,median,25,--max-num-seqs 4\n"+
		"b2,s,t,m/two,h200_sxm,1,bf16,auto,vllm,200,50,closed,4,,8,tpot_ms,median,9,--max-num-seqs 4\n"+
		// Configuration C: max throughput over 30 requests → 30 clients.
		"c1,s,t,m/one,b200_sxm,4,nvfp4,fp8,trtllm,128,128,max,30,,30,output_tok_s_per_gpu,total,100,\n"+
		// Configuration D: an open loop at 2.5 req/s.
		"d1,s,t,m/one,h100_sxm,1,fp8,auto,vllm,300,20,rate,,2.5,40,ttft_ms,mean,30,\n"+
		// Configuration E: random lengths, SGLang's pooled ITL (the gap).
		"e1,s,t,m/one,h200_sxm,4,bf16,auto,sglang,uniform:1:1000,uniform:1:200,rate,,4,50,gap_ms,median,11.9,\n"+
		"x1,s,t,unknown/model,h100_sxm,1,fp8,auto,sglang,100,10,closed,1,,,ttft_ms,mean,5,\n"+
		"x2,s,t,reject/model,h100_sxm,1,fp8,auto,sglang,100,10,closed,1,,,ttft_ms,mean,5,\n")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-points", points, "-replay", bin}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	table := out.String()

	a := fakeSummary(1000, 100, 10, 2)
	b := fakeSummary(200, 50, 4, 1)
	c := fakeSummary(128, 128, 30, 4)
	d := fakeSummary(300, 20, 2.5, 1)
	e := fakeSummary(1000, 200, 4, 4)
	apes := map[string]float64{
		"a1": ape(a.ttftMean, 125), "a2": ape(a.itlMean, 10), "a3": ape(a.tokS, 800),
		"b1": ape(b.ttftP50, 25), "b2": ape(b.itlP50, 9), "c1": ape(c.tokSPerGPU, 100),
		"d1": ape(d.ttftMean, 30),
		"e1": ape(e.itlP50-1, 11.9), // gap p50 = 10 + 4/10 + 0.5 − 1 = 9.9: |9.9 − 11.9| / 11.9
	}
	// Worked out by hand from the fake's formulas: a1 = |100−125|/125 = 20 %,
	// a2 = |11−10|/10 = 10 %, b1 = |21−25|/25 = 16 %, b2 = |10.9−9|/9 ≈ 21.1 %.
	for id, want := range map[string]float64{"a1": 20, "a2": 10, "b1": 16, "d1": 0} {
		if math.Abs(apes[id]-want) > 1e-9 {
			t.Fatalf("%s: APE %g, hand-computed %g", id, apes[id], want)
		}
	}
	for id, v := range apes {
		if !strings.Contains(table, fmt.Sprintf("| %.1f %% |", v)) || !strings.Contains(table, "| "+id+" |") {
			t.Errorf("point %s with APE %.1f %% missing from:\n%s", id, v, table)
		}
	}
	// Slices: all TTFT = median(20, 16, 0) = 16 (✗ > 15); all TPOT/ITL =
	// median(10, 21.1, 16.8) = 16.8 (✗ > 8); throughput = median(a3, c1).
	wantAll := fmt.Sprintf("| all | %.1f %% (n=3) ✗ | 16.0 %% (n=3) ✗ | %s | — | 2 |",
		apes["e1"], cell([]float64{apes["a3"], apes["c1"]}, FamilyThroughput))
	if !strings.Contains(table, wantAll) {
		t.Errorf("want slice row %q in:\n%s", wantAll, table)
	}
	// Every point here has source "s": its slice is the whole table's.
	if wantSource := strings.Replace(wantAll, "| all |", "| source s |", 1); !strings.Contains(table, wantSource) {
		t.Errorf("want slice row %q in:\n%s", wantSource, table)
	}
	for _, row := range []string{
		"| gpu h200_sxm | 19.0 % (n=2) ✗ | 16.0 % (n=1) ✗ | — | — | 0 |", // TPOT/ITL: median(21.1, 16.8)
		"| gpu h100_sxm | 10.0 % (n=1) ✗ | 10.0 % (n=2) ✓ | 5.1 % (n=1) ✓ | — | 2 |",
		"| engine sglang | 16.8 % (n=1) ✗ | — | — | — | 2 |",
		"| model unknown/model | — | — | — | — | 1 |",
		"| engine vllm | 21.1 % (n=1) ✗ | 8.0 % (n=2) ✓ | — | — |",
		"| model m/one | 13.4 % (n=2) ✗ | 10.0 % (n=2) ✓ |", // TPOT/ITL: median(10, 16.8)
		"| load max | — | — |",
		"| load rate | 16.8 % (n=1) ✗ | 0.0 % (n=1) ✓ | — | — | 0 |",
	} {
		if !strings.Contains(table, row) {
			t.Errorf("want %q in:\n%s", row, table)
		}
	}
	if !strings.Contains(table, "10 points from") || !strings.Contains(table, "8 compared, 2 skipped") {
		t.Errorf("counts wrong:\n%s", table)
	}
	if !strings.Contains(table, "| x1 | unknown/model | h100_sxm | 1 | fp8 / auto | sglang | 100 / 10 | C=1 | replay exit status 2: --model unknown/model: unknown model (architecture \\| shape) |") {
		t.Errorf("unknown model not skipped with replay's last stderr line:\n%s", table)
	}
	if !strings.Contains(table, "| x2 | reject/model |") || !strings.Contains(table, "replay completed 99 of 100 requests (1 rejected, 0 unfinished)") {
		t.Errorf("rejecting run not skipped:\n%s", table)
	}

	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d replay runs, want one per configuration (7):\n%s", len(lines), calls)
	}
	for _, want := range []string{
		"replay --json --no-progress --hardware h100_sxm --model m/one --tensor-parallel-size 2 --engine-type trtllm --quantization fp8 --kv-cache-dtype fp8 --concurrency 10 --client-delay 1ms --requests 100 --input-len 1000 --output-len 100",
		"replay --json --no-progress --hardware h200_sxm --model m/two --tensor-parallel-size 1 --engine-type vllm --dtype bfloat16 --concurrency 4 --client-delay 1ms --requests 8 --input-len 200 --output-len 50 --max-num-seqs 4",
		"replay --json --no-progress --hardware h100_sxm --model m/one --tensor-parallel-size 1 --engine-type vllm --quantization fp8 --rate 2.5 --arrival poisson --requests 40 --input-len 300 --output-len 20",
		"replay --json --no-progress --hardware h200_sxm --model m/one --tensor-parallel-size 4 --engine-type sglang --dtype bfloat16 --rate 4 --arrival poisson --requests 50 --input-len uniform:1:1000 --output-len uniform:1:200",
		"replay --json --no-progress --hardware b200_sxm --model m/one --tensor-parallel-size 4 --engine-type trtllm --quantization modelopt_fp4 --kv-cache-dtype fp8 --concurrency 30 --requests 30 --input-len 128 --output-len 128",
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("no replay run %q among:\n%s", want, calls)
		}
	}
}

// TestBadPointsExitTwo: a bad points file or flag is one line and exit 2; a
// replay binary that cannot start is exit 1.
func TestBadPointsExitTwo(t *testing.T) {
	good := "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,closed,1,,,ttft_ms,mean,5,\n"
	tests := []struct {
		name, rows string
		args       []string
		want       string
	}{
		{"bad metric", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,closed,1,,,speed,mean,5,\n", nil, `points.csv:2: metric "speed" is unknown`},
		{"bad length", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,normal:5:1,10,closed,1,,,ttft_ms,mean,5,\n", nil, "isl must be N, uniform:MIN:MAX"},
		{"missing trace", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,trace:nope.jsonl,trace:nope.jsonl,max,3,,3,ttft_ms,mean,5,\n", nil, `trace "nope.jsonl": not a readable file`},
		{"trace and length", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,trace:nope.jsonl,10,max,3,,3,ttft_ms,mean,5,\n", nil, "isl and osl both trace:FILE"},
		{"closed trace", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,trace:nope.jsonl,trace:nope.jsonl,closed,3,,3,ttft_ms,mean,5,\n", nil, "a trace point is load max"},
		{"zero tp", "a,s,t,m,h100_sxm,0,fp8,auto,vllm,10,10,closed,1,,,ttft_ms,mean,5,\n", nil, "tp must be an integer ≥ 1"},
		{"negative value", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,closed,1,,,ttft_ms,mean,-5,\n", nil, "value must be a number > 0"},
		{"max without requests", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,max,1,,,output_tok_s,total,5,\n", nil, "needs its number of requests"},
		{"throughput median", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,closed,1,,,output_tok_s,median,5,\n", nil, "does not fit metric"},
		{"duplicate id", good + good, nil, `points.csv:3: duplicate id "a"`},
		{"unknown weights", "a,s,t,m,h100_sxm,1,int3,auto,vllm,10,10,closed,1,,,ttft_ms,mean,5,\n", nil, `weights "int3"`},
		{"empty", "", nil, "no points"},
		{"rate without requests", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,rate,,3,,ttft_ms,mean,5,\n", nil, "needs its rate and its number of requests"},
		{"closed with rate", "a,s,t,m,h100_sxm,1,fp8,auto,vllm,10,10,closed,2,3,,ttft_ms,mean,5,\n", nil, "a closed point has no rate"},
		{"no match", good, []string{"-only", "zzz"}, "matches no point"},
		{"bad jobs", good, []string{"-jobs", "0"}, "must be ≥ 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-points", writePoints(t, tt.rows), "-replay", "/nonexistent"}, tt.args...)
			var out, errb bytes.Buffer
			if code := run(context.Background(), args, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2; stderr %q", code, errb.String())
			}
			if !strings.Contains(errb.String(), tt.want) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tt.want)
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-points", writePoints(t, good), "-replay", "/nonexistent/mocker-server"}, &out, &errb); code != 1 {
		t.Fatalf("missing replay binary: exit %d, want 1 (%s)", code, errb.String())
	}
}

// TestPublishedPointsParse reads the committed points file: every row must
// be valid, and the set must cover what the issue asks (≥ 60 points, ≥ 3
// GPUs, ≥ 3 models).
func TestPublishedPointsParse(t *testing.T) {
	f, err := os.Open("../../testdata/hardware/published.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	points, err := ReadPoints(f, f.Name()) // its traces are relative to its directory
	if err != nil {
		t.Fatal(err)
	}
	gpus, models := map[string]bool{}, map[string]bool{}
	for _, p := range points {
		gpus[p.GPU], models[p.Model] = true, true
	}
	if len(points) < 60 || len(gpus) < 3 || len(models) < 3 {
		t.Fatalf("%d points, %d GPUs, %d models; want ≥ 60, 3, 3", len(points), len(gpus), len(models))
	}
}

// TestSlowReplaySkipped: a replay running past -timeout is stopped and its
// points skipped with the reason.
func TestSlowReplaySkipped(t *testing.T) {
	bin, _ := useFakeReplay(t)
	points := writePoints(t, "s1,s,t,slow/model,h100_sxm,1,fp8,auto,vllm,10,10,closed,1,,,ttft_ms,mean,5,\n")
	var out, errb bytes.Buffer
	start := time.Now()
	if code := run(context.Background(), []string{"-points", points, "-replay", bin, "-timeout", "300ms"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("the table waited %v for a replay it should have stopped after 300ms", d)
	}
	if !strings.Contains(out.String(), "| s1 | slow/model |") || !strings.Contains(out.String(), "replay did not finish within 300ms") {
		t.Errorf("slow replay not skipped with its reason:\n%s", out.String())
	}
}

// TestTracePoint: a trace:FILE point replays the file (relative to the
// points file) instead of synthetic lengths, with the point's serve flags,
// and a trace whose request count is not the point's is skipped.
func TestTracePoint(t *testing.T) {
	bin, log := useFakeReplay(t)
	points := writePoints(t, ""+
		"t1,s,t,m/one,a100_sxm,2,bf16,auto,vllm,trace:run.jsonl,trace:run.jsonl,max,3,,3,tpot_ms,median,20,--max-num-seqs 1024\n"+
		"t2,s,t,m/one,a100_sxm,2,bf16,auto,vllm,trace:run.jsonl,trace:run.jsonl,max,3,,3,output_tok_s,total,100,--max-num-seqs 1024\n"+
		"t3,s,t,m/one,a100_sxm,2,bf16,auto,vllm,trace:run.jsonl,trace:run.jsonl,max,4,,4,ttft_ms,mean,5,\n")
	trace := filepath.Join(filepath.Dir(points), "run.jsonl")
	lines := `{"timestamp": 0, "input_length": 100, "output_length": 7}
{"timestamp": 0, "input_length": 400, "output_length": 30}
{"timestamp": 0, "input_length": 20, "output_length": 1}
`
	if err := os.WriteFile(trace, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-points", points, "-replay", bin}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	table := out.String()
	// The fake prices a trace as its 3 requests at once with its longest
	// lengths: ITL p50 = 10 + 3/10 + 0.5 = 10.8 against 20 → 46 %.
	f := fakeSummary(400, 30, 3, 2)
	if math.Abs(f.itlP50-10.8) > 1e-9 {
		t.Fatalf("fake ITL p50 %g, hand-computed 10.8", f.itlP50)
	}
	for id, v := range map[string]float64{"t1": ape(f.itlP50, 20), "t2": ape(f.tokS, 100)} {
		if !strings.Contains(table, fmt.Sprintf("| %.1f %% |", v)) || !strings.Contains(table, "| "+id+" |") {
			t.Errorf("point %s with APE %.1f %% missing from:\n%s", id, v, table)
		}
	}
	if !strings.Contains(table, "| vllm | trace:run.jsonl | max (3 req.) | tpot_ms (median) |") {
		t.Errorf("a trace point's lengths are not its file, named once:\n%s", table)
	}
	if !strings.Contains(table, "| t3 |") || !strings.Contains(table, "has 3 requests, the point 4") {
		t.Errorf("a trace of 3 requests for a point of 4 not skipped:\n%s", table)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "replay --json --no-progress --hardware a100_sxm --model m/one --tensor-parallel-size 2 --engine-type vllm --dtype bfloat16 --max-num-seqs 1024 " + trace
	if got := strings.Split(strings.TrimSpace(string(calls)), "\n"); len(got) != 2 || (got[0] != want && got[1] != want) {
		t.Errorf("replay runs %q, want two, one of them %q", got, want)
	}
}
