package kv

import (
	"fmt"
	"testing"
)

// BenchmarkRadixMatchInsert4096 measures SGLang's per-request radix work
// for a 4,096-token prompt at page size 16: Match (half of it, 2,048
// tokens, is a cached system prompt) and Insert of the other half as a new
// 128-page leaf. With events the new pages are hashed (chained SHA-256) and
// announced; without, the tree is only indexed.
func BenchmarkRadixMatchInsert4096(b *testing.B) {
	for _, events := range []bool{false, true} {
		b.Run(fmt.Sprintf("events=%v", events), func(b *testing.B) {
			const pageSize, shared, prompt, batch = 16, 2048, 4096, 256
			prompts := make([][]uint32, batch)
			for i := range prompts {
				p := make([]uint32, prompt)
				for j := range p {
					p[j] = uint32(j) // the shared prefix
					if j >= shared {
						p[j] = uint32(1_000_000 + i*prompt + j)
					}
				}
				prompts[i] = p
			}
			c := NewRadixCache(1<<22, pageSize, events)
			fresh := func() {
				c.Reset()
				c.TakeEvents()
				c.Allocate(shared / pageSize)
				c.Insert("", prompts[0][:shared])
			}
			fresh()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := i % batch
				if k == 0 && i > 0 {
					b.StopTimer()
					fresh()
					b.StartTimer()
				}
				p := prompts[k]
				n, node := c.Match("", p[:prompt-1])
				if n != shared {
					b.Fatalf("matched %d", n)
				}
				c.IncLock(node)
				c.Allocate((prompt - n) / pageSize)
				c.Insert("", p)
				c.DecLock(node)
				if events {
					c.TakeEvents()
				}
			}
		})
	}
}
