package engine

import (
	"slices"
	"time"
)

// loraSlots models where a rank's LoRA adapters live, as vLLM's worker
// manages them: max_loras GPU slots and a CPU cache of max_cpu_loras
// adapters, both least-recently-used. Running an adapter that is not in a
// GPU slot costs the load time once, when it enters one; an adapter that has
// also left the CPU cache is read again first and costs the load time once
// more.
type loraSlots struct {
	cfg LoRAConfig
	gpu []Adapter // least recently used first
	cpu []Adapter // least recently used first
	// batch is scratch: the distinct adapters of the pass being planned.
	batch []Adapter
	// pending is load time of adapters registered while the engine had
	// work, charged to the next pass (vLLM loads them between steps).
	pending time.Duration
}

// activate makes the pass's adapters (distinct, at most MaxLoRAs) resident
// in GPU slots and returns the load time that costs. Adapters already in a
// slot are touched first, so the slots evicted for newcomers are never ones
// this pass uses.
func (l *loraSlots) activate(batch []Adapter) time.Duration {
	var cost time.Duration
	for _, a := range batch {
		if i := slices.Index(l.gpu, a); i >= 0 {
			l.gpu = append(slices.Delete(l.gpu, i, i+1), a)
		}
	}
	for _, a := range batch {
		if !slices.Contains(l.gpu, a) {
			cost += l.enter(a)
		}
	}
	return cost
}

// enter moves a into a GPU slot (and the CPU cache) and returns the load
// time that costs: once for the GPU copy, once more when it must first be
// read from disk into the CPU cache.
func (l *loraSlots) enter(a Adapter) time.Duration {
	cost := l.cfg.LoadTime
	if i := slices.Index(l.cpu, a); i >= 0 {
		l.cpu = slices.Delete(l.cpu, i, i+1)
	} else {
		cost += l.cfg.LoadTime
		if len(l.cpu) >= l.cfg.cpuSlots() {
			l.cpu = slices.Delete(l.cpu, 0, 1)
		}
	}
	l.cpu = append(l.cpu, a)
	if i := slices.Index(l.gpu, a); i >= 0 {
		l.gpu = slices.Delete(l.gpu, i, i+1)
	} else if len(l.gpu) >= l.cfg.MaxLoRAs {
		l.gpu = slices.Delete(l.gpu, 0, 1)
	}
	l.gpu = append(l.gpu, a)
	return cost
}

// passAdapters collects the distinct adapters of the sequences scheduled
// this pass, in running-list order.
func (c *Core) passAdapters() []Adapter {
	b := c.lora.batch[:0]
	for _, s := range c.running {
		if s.scheduled && s.req.Adapter.ID != 0 && !slices.Contains(b, s.req.Adapter) {
			b = append(b, s.req.Adapter)
		}
	}
	c.lora.batch = b
	return b
}

// loraLoadTime returns the pass's adapter load time after speedup (0 when
// LoRA is off, so passes without it keep their exact durations).
func (c *Core) loraLoadTime() time.Duration {
	if !c.cfg.LoRA.Enabled() {
		return 0
	}
	cost := c.lora.activate(c.passAdapters()) + c.lora.pending
	c.lora.pending = 0
	if cost == 0 || NoDelay(c.prefillDiv) {
		return 0
	}
	return saturatingDuration(float64(cost) / c.prefillDiv)
}

// LoadAdapter registers an adapter as vLLM's add_lora does: it is read into
// the CPU cache and activated in a GPU slot (least recently used ones make
// room). vLLM does this between two steps, so the load time delays the next
// pass when the engine has work and costs nothing on an idle engine.
// Ignored when LoRA is off.
func (c *Core) LoadAdapter(a Adapter) {
	if !c.cfg.LoRA.Enabled() || a.ID == 0 {
		return
	}
	cost := c.lora.enter(a)
	if !c.Idle() {
		c.lora.pending += cost
	}
	if c.observer != nil {
		c.observer.ObserveGauges(c.gauges())
	}
}

// adapterGauges fills the adapter lists of g: the adapters with running and
// with waiting requests, in the order each adapter first got a live request
// (vLLM reports them in the order its per-adapter table gained them).
func (c *Core) adapterGauges(g *Gauges) {
	if !c.cfg.LoRA.Enabled() {
		return
	}
	g.MaxLoRAs = c.cfg.LoRA.MaxLoRAs
	g.GPUAdapters, g.CPUAdapters = c.lora.gpu, c.lora.cpu
	kept := c.adapterOrder[:0]
	c.runningNames, c.waitingNames = c.runningNames[:0], c.waitingNames[:0]
	for _, name := range c.adapterOrder {
		running := slices.ContainsFunc(c.running, func(s *sequence) bool { return s.req.Adapter.Name == name })
		waiting := false
		for i := 0; i < c.waiting.Len() && !waiting; i++ {
			waiting = c.waiting.At(i).req.Adapter.Name == name
		}
		if !running && !waiting {
			continue // the adapter's last request left; a later one re-enters at the end
		}
		kept = append(kept, name)
		if running {
			c.runningNames = append(c.runningNames, name)
		}
		if waiting {
			c.waitingNames = append(c.waitingNames, name)
		}
	}
	c.adapterOrder = kept
	g.RunningAdapters, g.WaitingAdapters = c.runningNames, c.waitingNames
	if len(c.runningNames) < c.cfg.LoRA.MaxLoRAs {
		return
	}
	// Every slot is taken: waiting requests of other adapters are deferred.
	for i := 0; i < c.waiting.Len(); i++ {
		name := c.waiting.At(i).req.Adapter.Name
		if name != "" && !slices.Contains(c.runningNames, name) {
			g.Waiting--
			g.WaitingDeferred++
		}
	}
}

// noteAdapter records that a request of the named adapter arrived.
func (c *Core) noteAdapter(name string) {
	if name != "" && c.cfg.LoRA.Enabled() && !slices.Contains(c.adapterOrder, name) {
		c.adapterOrder = append(c.adapterOrder, name)
	}
}
