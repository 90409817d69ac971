package kv

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/zeebo/xxh3"
)

// Names of the block hash algorithms accepted by NewHasher; docs/kv-hashing.md
// gives both byte layouts and their test vectors.
const (
	// AlgoXXH3 is the default algorithm: Dynamo's router computes the same
	// hashes from token ids, so both sides agree without exchanging them.
	AlgoXXH3 = "xxh3"
	// AlgoSHA256CBOR reproduces vLLM's sha256_cbor block hashes (llm-d's
	// indexer mode).
	AlgoSHA256CBOR = "sha256_cbor"
)

// xxh3Seed is the XXH3 seed of every xxh3 block hash. It is fixed so that
// local hashes match the ones Dynamo's router computes from token ids.
const xxh3Seed = 1337

// A Hasher computes the sequence hashes of full blocks with one algorithm
// and block size. It is immutable after construction and may be shared by
// any number of goroutines; per-request state lives in a HashChain.
type Hasher struct {
	sha       bool
	blockSize int
	// noneHash is the parent digest of block 0 for sha256_cbor.
	noneHash [sha256.Size]byte
}

// NewHasher returns a Hasher for algorithm algo (AlgoXXH3 or AlgoSHA256CBOR)
// and blocks of blockSize tokens.
//
// The seed is used only by AlgoSHA256CBOR; an empty seed means "0". The
// package reads no environment: vLLM's PYTHONHASHSEED fallback is applied by
// internal/config, which resolves hash_seed before it reaches the engine.
func NewHasher(algo string, seed string, blockSize int) (*Hasher, error) {
	if blockSize <= 0 {
		return nil, fmt.Errorf("kv: block size must be positive, got %d", blockSize)
	}
	h := &Hasher{blockSize: blockSize}
	switch algo {
	case AlgoXXH3:
	case AlgoSHA256CBOR:
		h.sha = true
		if seed == "" {
			seed = "0"
		}
		h.noneHash = sha256.Sum256(appendCBORText(nil, seed))
	default:
		return nil, fmt.Errorf("kv: unknown block hash algorithm %q (want %q or %q)", algo, AlgoXXH3, AlgoSHA256CBOR)
	}
	return h, nil
}

// BlockSize returns the number of tokens per block.
func (h *Hasher) BlockSize() int { return h.blockSize }

// A HashChain holds the sequence hashes of one request's full blocks and
// the state needed to extend them as more blocks fill up.
//
// The zero value is an empty chain without cache salt. A chain must only
// ever be extended by one Hasher, since it keeps that Hasher's running
// digest. It is not safe for concurrent use.
type HashChain struct {
	salt string
	// adapter is the LoRA adapter's name ("" for the base model); it is
	// mixed into every block.
	adapter string
	// mm holds the prompt's multimodal items (nil for a text prompt, so
	// the chains of text requests stay small).
	mm     *mmChain
	hashes []uint64
	// last is the full digest of the last hashed block (sha256_cbor only):
	// the digest chain uses all 32 bytes, the wire value only 8.
	last [sha256.Size]byte
	// buf is scratch space for the bytes of one block, reused across
	// Extend calls so that steady-state hashing does not allocate.
	buf []byte
}

// NewChain returns an empty chain for a request with the given cache salt
// ("" for none).
func (h *Hasher) NewChain(salt string) HashChain {
	return HashChain{salt: salt}
}

// NewKeyedChain returns an empty chain for a request with the given cache
// salt and LoRA adapter; the adapter's name enters every block's hash
// (docs/kv-hashing.md), so the same tokens under two adapters never share a
// hash.
func (h *Hasher) NewKeyedChain(keys Keys) HashChain {
	c := HashChain{salt: keys.Salt, adapter: keys.Adapter.Name}
	if len(keys.MM) > 0 {
		c.mm = &mmChain{keys: Keys{MM: keys.MM, PromptLen: keys.PromptLen}}
	}
	return c
}

// Hashes returns the sequence hashes computed so far, one per full block in
// block order. The slice aliases the chain's storage: callers must not
// modify it, and a later Extend may move the storage (the values already
// returned stay correct).
func (c *HashChain) Hashes() []uint64 { return c.hashes }

// Salt returns the chain's cache salt ("" for none).
func (c *HashChain) Salt() string { return c.salt }

// AdapterName returns the name of the chain's LoRA adapter ("" for none).
func (c *HashChain) AdapterName() string { return c.adapter }

// Extend makes c hold the sequence hashes of blocks [0, fullBlocks) of a
// sequence whose token ids start with tokens; tokens must hold at least
// fullBlocks*h.BlockSize() ids. Only blocks not hashed yet are computed, so
// calling Extend as a sequence grows costs O(new blocks) overall. Blocks
// already hashed are assumed to cover the same tokens as before.
func (h *Hasher) Extend(c *HashChain, tokens []uint32, fullBlocks int) {
	have := len(c.hashes)
	if fullBlocks <= have {
		return
	}
	bs := h.blockSize
	_ = tokens[fullBlocks*bs-1] // fail early, before any state changes
	// Amortised growth: decode steps add one block at a time.
	c.hashes = slices.Grow(c.hashes, fullBlocks-have)
	for i := have; i < fullBlocks; i++ {
		block := tokens[i*bs : (i+1)*bs]
		var s uint64
		if h.sha {
			s = h.sha256Block(c, i, block)
		} else {
			s = h.xxh3Block(c, i, block)
		}
		c.hashes = append(c.hashes, s)
	}
}

// xxh3Block returns S_i for block i under AlgoXXH3: the local hash of the
// block's little-endian token ids (followed by the adapter name's bytes
// under a LoRA adapter, then the block's multimodal keys), chained with
// S_(i-1); the cache salt enters block 0 only.
func (h *Hasher) xxh3Block(c *HashChain, i int, block []uint32) uint64 {
	buf := c.scratch(4*len(block) + len(c.adapter))
	for j, t := range block {
		binary.LittleEndian.PutUint32(buf[4*j:], t)
	}
	copy(buf[4*len(block):], c.adapter)
	for _, k := range c.mm.blockKeys(i, h.blockSize) {
		buf = appendMMLocal(buf, k)
	}
	c.buf = buf
	local := xxh3.HashSeed(buf, xxh3Seed)
	if i > 0 {
		var pair [16]byte
		binary.LittleEndian.PutUint64(pair[:8], c.hashes[i-1])
		binary.LittleEndian.PutUint64(pair[8:], local)
		return xxh3.HashSeed(pair[:], xxh3Seed)
	}
	if c.salt == "" {
		return local
	}
	buf = binary.LittleEndian.AppendUint64(buf[:0], local)
	buf = append(buf, c.salt...)
	c.buf = buf
	return xxh3.HashSeed(buf, xxh3Seed)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// scratch returns c's scratch buffer resliced to n bytes, growing it if
// needed.
func (c *HashChain) scratch(n int) []byte {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	return c.buf
}

// sha256Block returns S_i for block i under AlgoSHA256CBOR (the last 8
// digest bytes, big-endian) and records its full digest as the next block's
// parent; the cache salt is block 0's extra key, as in vLLM.
func (h *Hasher) sha256Block(c *HashChain, i int, block []uint32) uint64 {
	parent := &h.noneHash
	if i > 0 {
		parent = &c.last
	}
	// Canonical CBOR of [parent, [tokens...], extra].
	buf := append(c.buf[:0], cborArray|3)
	buf = appendCBORHead(buf, cborBytes, sha256.Size)
	buf = append(buf, parent[:]...)
	buf = appendCBORHead(buf, cborArray, uint64(len(block)))
	for _, t := range block {
		buf = appendCBORHead(buf, cborUint, uint64(t))
	}
	// Extra keys in vLLM's order: the adapter name (every block), the
	// multimodal items' (identifier, offset) pairs, then the salt (block
	// 0); null when there are none.
	salted := i == 0 && c.salt != ""
	mm := c.mm.blockKeys(i, h.blockSize)
	switch n := boolInt(c.adapter != "") + len(mm) + boolInt(salted); n {
	case 0:
		buf = append(buf, cborNull)
	default:
		buf = appendCBORHead(buf, cborArray, uint64(n))
		if c.adapter != "" {
			buf = appendCBORText(buf, c.adapter)
		}
		for _, k := range mm {
			buf = appendCBORHead(buf, cborArray, 2)
			buf = appendCBORText(buf, k.Identifier)
			buf = appendCBORInt(buf, k.Offset)
		}
		if salted {
			buf = appendCBORText(buf, c.salt)
		}
	}
	c.buf = buf
	c.last = sha256.Sum256(buf)
	return binary.BigEndian.Uint64(c.last[sha256.Size-8:])
}
