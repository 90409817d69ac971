package replay

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRunExplainsRejections replays requests some of which can never run —
// prompts past max_model_len, and a prompt that needs more
// blocks than the pool holds — and checks that the report counts them by
// reason, equal to the rejected rows, and that the terminal table and the
// HTML page both show the explanation.
func TestRunExplainsRejections(t *testing.T) {
	cfg := fixedTimingConfig()
	cfg.NumBlocks = 100 // 1600 tokens: a 2000-token prompt can never fit
	cfg.MaxModelLen = 3000
	var reqs []Request
	rows := map[string]int{}
	for i, n := range []struct{ prompt, output int }{
		{100, 4}, {3500, 4}, {200, 4}, {3200, 4}, {2000, 4}, {4000, 4}, {50, 4},
	} {
		reqs = append(reqs, Request{Arrival: time.Duration(i) * time.Millisecond, Prompt: seqPrompt(uint64(i+1), n.prompt), OutputTokens: n.output})
	}
	rep, err := Run(&sliceSource{reqs: reqs}, Options{Workers: fleet(1, cfg), Router: RoundRobin, Seed: 1,
		Rows: func(r *RequestRow) error {
			if r.FinishReason == "rejected" {
				rows[r.Error]++
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	total := 0
	for _, c := range rep.Rejections {
		got[c.Reason] = c.Count
		total += c.Count
		if c.Explanation == "" || rows[c.Example] == 0 {
			t.Errorf("%s: explanation %q, example %q is not a rejected row's message", c.Reason, c.Explanation, c.Example)
		}
	}
	want := map[string]int{"context_length": 3, "kv_capacity": 1}
	if len(got) != len(want) || got["context_length"] != 3 || got["kv_capacity"] != 1 {
		t.Errorf("rejections by reason %v, want %v", got, want)
	}
	if total != rep.Summary.Rejected || rep.Summary.Rejected != 4 || rep.Rejections[0].Reason != "context_length" {
		t.Errorf("rejections %+v add up to %d, summary says %d (want 4, most frequent first)", rep.Rejections, total, rep.Summary.Rejected)
	}

	var table bytes.Buffer
	if err := WriteTable(&table, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"4 of 7 requests of  were rejected", "context_length  3", "kv_capacity     1"} {
		if !strings.Contains(table.String(), line) {
			t.Errorf("terminal table lacks %q:\n%s", line, table.String())
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Rejections {
		cell := "<tr><td>" + c.Reason + "</td><td>" + strconv.Itoa(c.Count) + "</td>"
		if !strings.Contains(page.String(), cell) {
			t.Errorf("HTML page lacks the row %q", cell)
		}
	}

	// Without rejections there is no table, and the JSON has no key.
	rep, err = Run(&sliceSource{reqs: reqs[:1]}, Options{Workers: fleet(1, cfg), Router: RoundRobin, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	table.Reset()
	page.Reset()
	if err := WriteTable(&table, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&page, []*Report{rep}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(table.String(), "rejected (") || strings.Contains(page.String(), `"rejections"`) {
		t.Errorf("a run without rejections explains some:\n%s", table.String())
	}
}
