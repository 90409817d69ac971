package kv

import "testing"

// BenchmarkAllocateReleaseBackends is BenchmarkAllocateRelease for every
// eviction backend: allocate 16 blocks (evicting cached ones), release
// them.
func BenchmarkAllocateReleaseBackends(b *testing.B) {
	for _, backend := range []EvictionBackend{EvictLRU, EvictLineage, EvictMultiLRU} {
		b.Run(string(backend), func(b *testing.B) {
			const numBlocks, k = 4096, 16
			p, err := NewPoolWithEviction(numBlocks, 16, true, backend)
			if err != nil {
				b.Fatal(err)
			}
			blocks, _ := p.Allocate(nil, numBlocks)
			hashes := make([]uint64, numBlocks)
			for i := range hashes {
				hashes[i] = uint64(i)
			}
			p.Cache(blocks, hashes, make([]uint32, numBlocks*16), 0, numBlocks, Keys{})
			p.Release(blocks)
			p.TakeEvents()
			dst := make([]BlockID, 0, k)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				dst, _ = p.Allocate(dst[:0], k)
				p.Release(dst)
				if i%256 == 0 {
					p.TakeEvents()
				}
			}
		})
	}
}
