package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/fleet"
)

// TestTrace_BadInputExitsWithOneLine: every refused command line is one
// line on stderr and exit status 2.
func TestTrace_BadInputExitsWithOneLine(t *testing.T) {
	faults := filepath.Join(t.TempDir(), "faults")
	if err := os.WriteFile(faults, []byte("10s 3 explode\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no url", []string{"trace", "--requests", "5"}, "--url is required"},
		{"no workload", []string{"trace", "--url", "http://127.0.0.1:1"}, "give a TRACE file or a synthetic workload"},
		{"both workloads", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "../../testdata/mooncake-synthetic-head400.jsonl"}, "not both"},
		{"unknown router", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "--router", "best"}, `unknown router "best"`},
		{"router twice", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "--router", "kv_aware", "--router", "round_robin,kv_aware"}, "kv_aware is given twice"},
		{"faults without admin", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "--faults", faults}, "--faults needs --fleet-admin"},
		{"bad fault", []string{"trace", "--url", "http://127.0.0.1:1", "--fleet-admin", "http://127.0.0.1:2", "--requests", "5", "--faults", faults}, `faults:1: unknown action "explode"`},
		{"bad time scale", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "--time-scale", "0"}, "--time-scale must be > 0"},
		{"bad length", []string{"trace", "--url", "http://127.0.0.1:1", "--requests", "5", "--input-len", "gauss:1"}, "--input-len"},
		{"missing trace", []string{"trace", "--url", "http://127.0.0.1:1", "nope.jsonl"}, "trace: open nope.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(c.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", code, stderr.String(), c.want)
			}
		})
	}
}

// TestTrace_ThroughAFleet runs the subcommand against a real 2-worker fleet
// (worker 0's URL as the "router"): the JSON report has the online side,
// the two offline policies asked for (the flag repeated and as a list) and
// the bound, and the CSV has one row per request with each policy's worker.
func TestTrace_ThroughAFleet(t *testing.T) {
	overlay := map[string]any{"timing_model": "fixed", "fixed_prefill_ms": json.Number("10"), "fixed_decode_ms": json.Number("2"),
		"enable_prompt_tokens_details": true, "log_level": "warn"}
	members, _, err := fleet.Plan(fleet.Spec{Workers: 2, Base: config.LoadOptions{Overlay: overlay,
		LookupEnv: func(string) (string, bool) { return "", false }, Hostname: func() (string, error) { return "h", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	adminURL := make(chan string, 1)
	f, err := fleet.Start(context.Background(), members, fleet.Options{AdminAddr: "127.0.0.1:0", AdminReady: func(u string) { adminURL <- u }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	admin := <-adminURL
	rows := filepath.Join(t.TempDir(), "rows.csv")
	html := filepath.Join(t.TempDir(), "lab.html")
	var stdout, stderr bytes.Buffer
	code := run([]string{"trace", "--url", f.Worker(0).URL(), "--fleet-admin", admin, "--json", "--csv", rows, "--html", html,
		"--router", "round_robin", "--router", "kv_aware", "--requests", "24", "--rate", "40", "--input-len", "64",
		"--output-len", "4", "--prefix-groups", "2", "--prefix-len", "256", "--turns", "2", "--turn-gap", "100ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep struct {
		Online  struct{ Requests, Completed int } `json:"online"`
		Offline []struct {
			Name     string `json:"name"`
			Requests int    `json:"requests"`
		} `json:"offline"`
		Bound   *struct{ PrefixCacheHitRate float64 } `json:"clairvoyant_bound"`
		Verdict []string                              `json:"verdict"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%.300s", err, stdout.String())
	}
	if rep.Online.Requests != 24 || rep.Online.Completed != 24 || len(rep.Offline) != 2 || rep.Offline[0].Name != "round_robin" ||
		rep.Offline[1].Name != "kv_aware" || rep.Offline[1].Requests != 24 || rep.Bound == nil || len(rep.Verdict) < 3 {
		t.Errorf("report %+v", rep)
	}
	file, err := os.Open(rows)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	recs, err := csv.NewReader(file).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 25 || recs[0][len(recs[0])-1] != "kv_aware_worker" || recs[1][2] != "0" {
		t.Errorf("CSV: %d lines, header %v, first row %v", len(recs), recs[0], recs[1])
	}
	page, err := os.ReadFile(html)
	if err != nil || !bytes.Contains(page, []byte("<canvas id=\"imbalance\"")) || bytes.Contains(page, []byte("src=\"http")) {
		t.Errorf("HTML report missing, without its chart, or loading from the network (%v)", err)
	}
}
