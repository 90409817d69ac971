package routerlab

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// sides returns the online side, then the offline ones.
func (r *Report) sides() []*Side {
	out := []*Side{&r.Online}
	for i := range r.Offline {
		out = append(out, &r.Offline[i])
	}
	return out
}

func hit(v float64) string {
	if v < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

// WriteTable writes the terminal report.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "router %s  model %s  %.1f s wall", r.URL, r.Model, r.WallS)
	if r.Interrupted {
		fmt.Fprint(w, "  (interrupted: partial report)")
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\trequests\tfailed\thit rate\tTTFT p50\tTTFT p99\tITL p50\tITL p99\tE2E p50\treq max/mean\ttok max/mean\tin-flight max/mean\tsame worker\t")
	for _, s := range r.sides() {
		same := "-"
		if s.Name != "online" {
			same = fmt.Sprintf("%.0f%%", 100*s.SameRouting)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%.1f\t%.1f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.2f\t%s\t\n", s.Name, s.Requests, s.Failed,
			hit(s.PrefixCacheHitRate), s.TTFTMs.P50, s.TTFTMs.P99, s.ITLMs.P50, s.ITLMs.P99, s.E2EMs.P50,
			s.Imbalance.Requests, s.Imbalance.Tokens, s.Imbalance.InFlight, same)
	}
	if b := r.Bound; b != nil {
		fmt.Fprintf(tw, "clairvoyant\t\t\t%s\t\t\t\t\t\t\t\t\t\t\n", hit(b.HitRate))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(latencies in ms; ITL is per request (e2e − ttft) / (tokens − 1))")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "load per worker (online):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\trequests\tfailed\tprompt tok\toutput tok\thit rate\tpeak KV\tpeak running\tpeak waiting\t")
	for _, wl := range r.Online.Workers {
		kv, run, wait := "-", "-", "-"
		for _, s := range r.Samples {
			if s.Worker == wl.Worker {
				kv, run, wait = fmt.Sprintf("%.1f%%", 100*peak(s.KVUsage)), fmt.Sprint(peak(s.Running)), fmt.Sprint(peak(s.Waiting))
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t\n", wl.Worker, wl.Requests, wl.Failed, wl.PromptTokens, wl.OutputTokens,
			hit(wl.HitRate), kv, run, wait)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := r.Online.Unattributed; n > 0 {
		fmt.Fprintf(w, "%d failed request(s) had no worker's answer (refused, reset before the headers, or the router's own error)\n", n)
	}
	if len(r.Faults) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "faults:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "at s\tworker\taction\twindow s\tserved\tfailed at worker\tcut in flight\tcut, no worker\tfailed, no worker\tlast failure s\tfirst served s\terror\t")
		for _, f := range r.Faults {
			fmt.Fprintf(tw, "%.1f\t%s\t%s\t%.1f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", f.SentS, f.Worker, f.Action, f.WindowS, f.Served,
				f.FailedAtWorker, f.CutInFlight, f.CutUnattributed, f.FailedUnattributed, secs(f.LastFailureS), secs(f.FirstServedS), f.Error)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Verdict) > 0 {
		fmt.Fprintln(w)
		for _, l := range r.Verdict {
			fmt.Fprintln(w, l)
		}
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range r.Notes {
			fmt.Fprintln(w, "note: "+n)
		}
	}
	return nil
}

func secs(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func peak(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// WriteCSV writes one row per request in workload order, with the worker
// each offline policy chose for it.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"index", "sent_ms", "worker", "status", "error", "prompt_tokens", "cached_tokens", "output_tokens",
		"ttft_ms", "e2e_ms", "itl_mean_ms"}
	for _, k := range r.OfflineRouters {
		head = append(head, k+"_worker")
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, rec := range r.rows {
		res := &rec.res
		row := []string{strconv.Itoa(rec.req.Index), "", res.worker, strconv.Itoa(res.status), res.err, strconv.Itoa(len(rec.prompt)),
			strconv.Itoa(res.cached), strconv.Itoa(res.tokens), "", "", ""}
		if rec.skipped != "" {
			row[4] = "not sent: " + rec.skipped
		} else {
			sp := rec.span(r.start)
			row[1] = f(sp.start)
			if sp.ok {
				row[8], row[9], row[10] = f(sp.ttft), f(sp.e2e), f(sp.itl)
			}
		}
		ws := r.offlineWorkers[rec]
		for i := range r.OfflineRouters {
			v := ""
			if i < len(ws) {
				v = ws[i]
			}
			row = append(row, v)
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
