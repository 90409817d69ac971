package kv

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAllocateRelease measures a request's block lifetime: allocate
// 16 blocks, release them, with eviction of cached blocks in the mix.
func BenchmarkAllocateRelease(b *testing.B) { benchAllocateRelease(b, EvictLRU) }

func benchAllocateRelease(b *testing.B, backend EvictionBackend) {
	const numBlocks, k = 4096, 16
	p, err := NewPoolWithEviction(numBlocks, 16, true, backend)
	if err != nil {
		b.Fatal(err)
	}
	// Cache every block under its own hash so that allocations evict.
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
			p.TakeEvents() // as the engine does once per pass
		}
	}
}

// BenchmarkLookup measures a prefix lookup that hits a 64-block chain.
func BenchmarkLookup(b *testing.B) {
	const chainLen = 64
	p := NewPool(1024, 16, true)
	blocks, _ := p.Allocate(nil, chainLen)
	r := rand.New(rand.NewPCG(1, 1))
	hashes := make([]uint64, chainLen)
	for i := range hashes {
		hashes[i] = r.Uint64()
	}
	p.Cache(blocks, hashes, make([]uint32, chainLen*16), 0, chainLen, Keys{})
	p.Release(blocks[chainLen/2:]) // half active, half evictable
	dst := make([]BlockID, 0, chainLen)
	b.ReportAllocs()
	for b.Loop() {
		dst = p.Lookup(hashes, chainLen, dst[:0])
	}
	if len(dst) != chainLen {
		b.Fatalf("%d hits, want %d", len(dst), chainLen)
	}
}

// BenchmarkExtendXXH3 measures hashing 64-token blocks, one new block per
// Extend call as prefill chunks and decode steps fill them.
func BenchmarkExtendXXH3(b *testing.B) {
	benchmarkExtend(b, AlgoXXH3)
}

// BenchmarkExtendSHA256CBOR is BenchmarkExtendXXH3 for sha256_cbor.
func BenchmarkExtendSHA256CBOR(b *testing.B) {
	benchmarkExtend(b, AlgoSHA256CBOR)
}

func benchmarkExtend(b *testing.B, algo string) {
	const bs, blocks = 64, 128
	h, err := NewHasher(algo, "0", bs)
	if err != nil {
		b.Fatal(err)
	}
	tokens := randomTokens(rand.New(rand.NewPCG(2, 2)), blocks*bs)
	c := h.NewChain("")
	h.Extend(&c, tokens, blocks) // size the chain's storage once
	b.SetBytes(blocks * bs * 4)
	b.ReportAllocs()
	for b.Loop() {
		c.hashes = c.hashes[:0] // rehash from scratch, reusing storage
		for n := 1; n <= blocks; n++ {
			h.Extend(&c, tokens, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*blocks), "ns/block")
}

// BenchmarkAllocateCacheRelease is the steady state of a full cache: every
// allocation evicts cached blocks (Removed events) and every cache call
// announces new ones (Stored events), drained once per simulated pass.
func BenchmarkAllocateCacheRelease(b *testing.B) {
	const numBlocks, k, bs = 4096, 16, 16
	p := NewPool(numBlocks, bs, true)
	tokens := make([]uint32, k*bs)
	hashes := make([]uint64, k)
	dst := make([]BlockID, 0, k)
	next := uint64(0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range hashes {
			next++
			hashes[j] = next
		}
		dst, _ = p.Allocate(dst[:0], k)
		p.Cache(dst, hashes, tokens, 0, k, Keys{})
		p.Release(dst)
		if i%64 == 0 {
			p.TakeEvents()
		}
	}
}
