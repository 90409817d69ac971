package replay

// keyMetrics name the rows of tableRows shown on the report's first
// screen; the page keeps the full table folded below them.
var keyMetrics = []string{
	"requests completed", "requests rejected", "request throughput", "output token throughput",
	"prefix cache hit rate", "preemptions", "TTFT p50", "TTFT p99", "ITL p50", "ITL p99", "E2E p50", "E2E p99",
}

// keyRows returns the rows of rows named in keyMetrics, in that order.
func keyRows(rows []htmlRow) []htmlRow {
	byName := map[string]htmlRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	out := make([]htmlRow, 0, len(keyMetrics))
	for _, name := range keyMetrics {
		if r, ok := byName[name]; ok {
			out = append(out, r)
		}
	}
	return out
}
