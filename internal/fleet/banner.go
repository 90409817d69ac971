package fleet

import (
	"fmt"
	"io"
	"strings"

	"github.com/mocker-server/mocker-server/internal/worker"
)

// printSummary writes the fleet's startup summary to stderr in one block:
// where the workers and the admin API listen and what each group of
// workers runs. Each worker's own "listening on" line (and its ZMQ
// endpoints) came before it.
func (f *Fleet) printSummary() {
	var b strings.Builder
	first, last := f.Worker(0), f.Worker(len(f.members)-1)
	fmt.Fprintf(&b, "fleet: %d workers, %s … %s (worker i on the base port + i)\n", len(f.members), first.URL(), last.URL())
	if f.adminURL != "" {
		fmt.Fprintf(&b, "  %-10s %s (/workers, /ui: the fleet page)\n", "admin API", f.adminURL)
	}
	// One line per run of workers with the same engine setup.
	for i := 0; i < len(f.members); {
		j := i
		desc := setupLine(f, i)
		for j+1 < len(f.members) && setupLine(f, j+1) == desc {
			j++
		}
		ids := f.members[i].ID
		if j > i {
			ids += "…" + f.members[j].ID
		}
		fmt.Fprintf(&b, "  %-10s %s\n", "worker "+ids, desc)
		i = j + 1
	}
	_, _ = io.WriteString(f.opts.Stderr, b.String())
}

// setupLine summarises worker i's engine: type, P/D role, KV pool, timing.
func setupLine(f *Fleet, i int) string {
	c := f.members[i].Config
	role := string(c.WorkerType)
	if role == "" {
		role = "aggregated"
	}
	return fmt.Sprintf("%s %s, dp %d, KV pool %s, timing %s",
		c.EngineType, role, c.DPSize, worker.KVPoolShape(c), c.TimingModel)
}
