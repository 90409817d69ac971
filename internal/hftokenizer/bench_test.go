package hftokenizer

import (
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processCPU returns the CPU time the process has used. The machine the
// benchmarks run on is shared, so wall time per op includes time spent
// descheduled; tokens per CPU-second is the figure that does not.
func processCPU(b *testing.B) time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		b.Fatal(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// proseParagraphs is English prose for the encode benchmark: ordinary
// sentences with punctuation, numbers and line breaks.
var proseParagraphs = []string{
	"It was a bright cold day in April, and the clocks were striking thirteen. The hallway smelt of boiled cabbage and old rag mats. At one end of it a coloured poster, too large for indoor display, had been tacked to the wall.",
	"The committee met on Tuesday to review the budget for 2025, which had grown by 12 percent over the previous year. Several members argued that the increase was necessary; others wanted a detailed account of every line item before voting.",
	"When she finally reached the station, the last train had already left. She sat on the bench, watched the rain, and wondered whether anyone would notice that she hadn't come home. It didn't matter, she told herself, not tonight.",
	"Modern processors execute instructions out of order, predict branches, and keep several levels of cache close to the cores. Writing fast software means understanding how data moves between memory and registers, not just counting operations.",
}

func proseText(paragraphs int) string {
	var b strings.Builder
	for i := 0; i < paragraphs; i++ {
		b.WriteString(proseParagraphs[i%len(proseParagraphs)])
		b.WriteString("\n\n")
	}
	return b.String()
}

// BenchmarkEncodeProse measures encode throughput on English prose with
// the Qwen3 vocabulary (tokens/s), word cache warm as in a running server.
func BenchmarkEncodeProse(b *testing.B) {
	for _, model := range []string{"qwen3", "llama3_1", "gemma3"} {
		b.Run(model, func(b *testing.B) {
			tok := loadModel(b, model)
			text := proseText(40)
			tokens := len(tok.Encode(text, false))
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			cpu := processCPU(b)
			for b.Loop() {
				tok.Encode(text, false)
			}
			cpu = processCPU(b) - cpu
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(tokens)*float64(b.N)/cpu.Seconds(), "tokens/cpu-s")
		})
	}
}

// BenchmarkEncodeCache compares the shared word cache with no cache at
// all, on one core and with all cores encoding at once (RunParallel), the
// way a server encodes requests from many goroutines.
func BenchmarkEncodeCache(b *testing.B) {
	shared := loadModel(b, "qwen3")
	uncachedModel := *shared.model
	uncachedModel.cache = nil
	uncached := *shared
	uncached.model = &uncachedModel
	text := proseText(40)
	tokens := len(shared.Encode(text, false))
	for _, variant := range []struct {
		name string
		tok  *Tokenizer
	}{{"shared", shared}, {"none", &uncached}} {
		b.Run(variant.name, func(b *testing.B) {
			cpu := processCPU(b)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					variant.tok.Encode(text, false)
				}
			})
			cpu = processCPU(b) - cpu
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(tokens)*float64(b.N)/cpu.Seconds(), "tokens/cpu-s")
		})
	}
}

// BenchmarkDecode measures Decode throughput on the ids of the prose.
func BenchmarkDecode(b *testing.B) {
	tok := loadModel(b, "qwen3")
	ids := tok.Encode(proseText(40), false)
	b.ResetTimer()
	for b.Loop() {
		tok.Decode(ids, false)
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkLoad measures Load of the Qwen3 tokenizer, with the heap it
// keeps (live after a GC) and the bytes it allocates on the way.
func BenchmarkLoad(b *testing.B) {
	for _, model := range []string{"qwen3", "llama3_1", "gemma3"} {
		b.Run(model, func(b *testing.B) {
			dir := modelDir(b, model)
			var before, after runtime.MemStats
			var keep *Tokenizer
			b.ResetTimer()
			cpu := processCPU(b)
			for b.Loop() {
				runtime.GC()
				runtime.ReadMemStats(&before)
				tok, err := Load(dir)
				if err != nil {
					b.Fatal(err)
				}
				runtime.ReadMemStats(&after)
				keep = tok
			}
			b.StopTimer()
			b.ReportMetric((processCPU(b)-cpu).Seconds()/float64(b.N), "cpu-s/op")
			allocated := after.TotalAlloc - before.TotalAlloc
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "live-MB")
			b.ReportMetric(float64(allocated)/(1<<20), "alloc-MB/op")
			runtime.KeepAlive(keep)
		})
	}
}
