package kv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fxamacker/cbor/v2"
	"github.com/zeebo/xxh3"
)

// vectorTokens are the two blocks of the test vectors in docs/kv-hashing.md.
var vectorTokens = []uint32{1, 2, 3, 4, 5, 6, 7, 8}

func newTestHasher(t testing.TB, algo, seed string, bs int) *Hasher {
	t.Helper()
	h, err := NewHasher(algo, seed, bs)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHashVectors(t *testing.T) {
	tests := []struct {
		name  string
		algo  string
		seed  string
		salt  string
		block int
		want  uint64
	}{
		{"xxh3 S_0", AlgoXXH3, "", "", 0, 14643705804678351452},
		{"xxh3 S_1", AlgoXXH3, "", "", 1, 4945711292740353085},
		{"xxh3 salted S_0", AlgoXXH3, "", "tenant-a", 0, 17415693292004026657},
		{"sha256_cbor seed 0 S_0", AlgoSHA256CBOR, "0", "", 0, 2164874634404590027},
		{"sha256_cbor seed 0 S_1", AlgoSHA256CBOR, "0", "", 1, 17270480062156288726},
		{"sha256_cbor seed 0 salted S_0", AlgoSHA256CBOR, "0", "tenant-a", 0, 13195198002585232116},
		{"sha256_cbor seed 42 S_0", AlgoSHA256CBOR, "42", "", 0, 5988051177307384287},
		{"sha256_cbor seed 42 S_1", AlgoSHA256CBOR, "42", "", 1, 11214766589215907092},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHasher(t, tt.algo, tt.seed, 4)
			c := h.NewChain(tt.salt)
			h.Extend(&c, vectorTokens, 2)
			if got := c.Hashes()[tt.block]; got != tt.want {
				t.Errorf("S_%d = %d (%#x), want %d (%#x)", tt.block, got, got, tt.want, tt.want)
			}
		})
	}
}

func TestXXH3LocalHashVectors(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		seed  uint64
		want  uint64
	}{
		{"binding sanity: seed 0, empty input", nil, 0, 0x2d06800538d394c2},
		{"H_0", []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0}, xxh3Seed, 0xcb38e4d7fb2dca5c},
		{"H_1", []byte{5, 0, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 8, 0, 0, 0}, xxh3Seed, 0xe8d3ec39b907b74c},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := xxh3.HashSeed(tt.input, tt.seed); got != tt.want {
				t.Errorf("XXH3-64 = %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestSHA256NoneHash(t *testing.T) {
	h := newTestHasher(t, AlgoSHA256CBOR, "0", 4)
	const want = "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"
	if got := hex.EncodeToString(h.noneHash[:]); got != want {
		t.Errorf("NONE_HASH = %s, want %s", got, want)
	}
}

func TestSHA256SeedDefaults(t *testing.T) {
	hashOf := func(t *testing.T, seed string) uint64 {
		t.Helper()
		h := newTestHasher(t, AlgoSHA256CBOR, seed, 4)
		c := h.NewChain("")
		h.Extend(&c, vectorTokens, 1)
		return c.Hashes()[0]
	}
	// The environment is set in every case to show the package does not
	// read it: PYTHONHASHSEED reaches the hasher only through
	// internal/config (TestPYTHONHASHSEEDReachesTheHasher there).
	tests := []struct {
		name string
		env  string
		seed string
		want uint64
	}{
		{"empty seed means 0", "", "", 2164874634404590027},
		{"seed 42", "", "42", 5988051177307384287},
		{"empty seed ignores PYTHONHASHSEED", "42", "", 2164874634404590027},
		{"explicit seed, PYTHONHASHSEED set", "42", "0", 2164874634404590027},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("PYTHONHASHSEED", tt.env)
			if got := hashOf(t, tt.seed); got != tt.want {
				t.Errorf("S_0 = %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestNewHasherRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		algo string
		bs   int
	}{
		{"unknown algorithm", "md5", 16},
		{"empty algorithm", "", 16},
		{"zero block size", AlgoXXH3, 0},
		{"negative block size", AlgoSHA256CBOR, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if h, err := NewHasher(tt.algo, "", tt.bs); err == nil {
				t.Errorf("NewHasher(%q, %d) = %v, want error", tt.algo, tt.bs, h)
			}
		})
	}
}

func TestExtendIsIncremental(t *testing.T) {
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		for _, salt := range []string{"", "tenant-a"} {
			t.Run(algo+"/salt="+salt, func(t *testing.T) {
				const bs, blocks = 16, 9
				h := newTestHasher(t, algo, "0", bs)
				tokens := randomTokens(rand.New(rand.NewPCG(1, 2)), blocks*bs+5)

				all := h.NewChain(salt)
				h.Extend(&all, tokens, blocks)

				steps := h.NewChain(salt)
				have := 0
				for _, n := range []int{0, 2, 2, 1, 4, 3, 9, 9} {
					h.Extend(&steps, tokens, n)
					have = max(have, n) // Extend never drops hashes
					if got := len(steps.Hashes()); got != have {
						t.Fatalf("after Extend(%d): %d hashes, want %d", n, got, have)
					}
					if !slices.Equal(steps.Hashes(), all.Hashes()[:len(steps.Hashes())]) {
						t.Fatalf("after Extend(%d): hashes %x differ from one-shot %x", n, steps.Hashes(), all.Hashes())
					}
				}
				if !slices.Equal(steps.Hashes(), all.Hashes()) {
					t.Errorf("incremental %x, one-shot %x", steps.Hashes(), all.Hashes())
				}
				if steps.Salt() != salt {
					t.Errorf("Salt() = %q, want %q", steps.Salt(), salt)
				}
			})
		}
	}
}

func TestZeroHashChainIsUnsalted(t *testing.T) {
	h := newTestHasher(t, AlgoXXH3, "", 4)
	var zero HashChain
	h.Extend(&zero, vectorTokens, 2)
	made := h.NewChain("")
	h.Extend(&made, vectorTokens, 2)
	if !slices.Equal(zero.Hashes(), made.Hashes()) {
		t.Errorf("zero chain %x, NewChain(\"\") %x", zero.Hashes(), made.Hashes())
	}
}

// TestSaltChangesEveryHash checks that a salt changes S_0 and, through the
// chain, every later hash, while the same salt reproduces the same chain.
func TestSaltChangesEveryHash(t *testing.T) {
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		t.Run(algo, func(t *testing.T) {
			const blocks = 4
			h := newTestHasher(t, algo, "0", 4)
			tokens := randomTokens(rand.New(rand.NewPCG(3, 4)), blocks*4)
			chain := func(salt string) []uint64 {
				c := h.NewChain(salt)
				h.Extend(&c, tokens, blocks)
				return c.Hashes()
			}
			plain, a, a2, b := chain(""), chain("tenant-a"), chain("tenant-a"), chain("tenant-b")
			if !slices.Equal(a, a2) {
				t.Errorf("same salt, different chains: %x vs %x", a, a2)
			}
			for i := range blocks {
				if plain[i] == a[i] || a[i] == b[i] {
					t.Errorf("block %d: unsalted %#x, tenant-a %#x, tenant-b %#x; want all different", i, plain[i], a[i], b[i])
				}
			}
		})
	}
}

// TestSaltOnlyEntersBlockZero checks that, apart from the chaining, the salt
// is mixed into block 0 alone: S_1 is computed from the salted S_0 exactly
// as an unsalted S_1 is computed from an unsalted S_0.
func TestSaltOnlyEntersBlockZero(t *testing.T) {
	h := newTestHasher(t, AlgoXXH3, "", 4)
	c := h.NewChain("tenant-a")
	h.Extend(&c, vectorTokens, 2)
	var pair [16]byte
	putLE64(pair[:8], c.Hashes()[0])
	putLE64(pair[8:], 0xe8d3ec39b907b74c) // H_1, unaffected by the salt
	if want := xxh3.HashSeed(pair[:], xxh3Seed); c.Hashes()[1] != want {
		t.Errorf("salted S_1 = %#x, want %#x", c.Hashes()[1], want)
	}

	// sha256_cbor: only block 0's extra is [salt]; block 1 of the salted
	// chain is block 1's encoding with null extra and the salted parent.
	hs := newTestHasher(t, AlgoSHA256CBOR, "0", 4)
	s := hs.NewChain("tenant-a")
	hs.Extend(&s, vectorTokens, 2)
	d0 := sha256.Sum256(mustCanonical(t, []any{hs.noneHash[:], []uint32{1, 2, 3, 4}, []string{"tenant-a"}}))
	d1 := sha256.Sum256(mustCanonical(t, []any{d0[:], []uint32{5, 6, 7, 8}, nil}))
	if want := beU64(d1[24:]); s.Hashes()[1] != want {
		t.Errorf("salted sha256_cbor S_1 = %#x, want %#x", s.Hashes()[1], want)
	}
}

func TestSHA256BlockLayout(t *testing.T) {
	// Canonical CBOR of [parent, [1,2,3,4], null]:
	// 83 58 20 <parent> 84 01 02 03 04 f6.
	h := newTestHasher(t, AlgoSHA256CBOR, "0", 4)
	c := h.NewChain("")
	h.Extend(&c, vectorTokens, 1)
	want := append([]byte{0x83, 0x58, 0x20}, h.noneHash[:]...)
	want = append(want, 0x84, 1, 2, 3, 4, 0xf6)
	if !bytes.Equal(c.buf, want) {
		t.Errorf("CBOR of block 0 = % x, want % x", c.buf, want)
	}
}

// TestCBORMatchesCanonicalEncoder cross-checks the hand-written encoder
// against fxamacker/cbor's canonical mode over every head width.
func TestCBORMatchesCanonicalEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	edges := []uint32{0, 1, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1}
	for _, bs := range []int{1, 4, 23, 24, 300} {
		for _, salt := range []string{"", "s", "a salt longer than twenty-three bytes"} {
			tokens := randomTokens(r, bs)
			for i := range tokens {
				if r.IntN(2) == 0 {
					tokens[i] = edges[r.IntN(len(edges))]
				}
			}
			h := newTestHasher(t, AlgoSHA256CBOR, "7", bs)
			c := h.NewChain(salt)
			h.Extend(&c, tokens, 1)
			var extra any
			if salt != "" {
				extra = []string{salt}
			}
			want := mustCanonical(t, []any{h.noneHash[:], tokens, extra})
			if !bytes.Equal(c.buf, want) {
				t.Errorf("bs=%d salt=%q: CBOR\n% x\nwant\n% x", bs, salt, c.buf, want)
			}
		}
	}
	for _, n := range []uint64{0, 23, 24, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<64 - 1} {
		if got, want := appendCBORHead(nil, cborUint, n), mustCanonical(t, n); !bytes.Equal(got, want) {
			t.Errorf("head(%d) = % x, want % x", n, got, want)
		}
	}
	if got, want := appendCBORText(nil, "0"), mustCanonical(t, "0"); !bytes.Equal(got, want) {
		t.Errorf("text \"0\" = % x, want % x", got, want)
	}
}

func TestExtendDoesNotAllocate(t *testing.T) {
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		t.Run(algo, func(t *testing.T) {
			const bs, blocks = 64, 32
			h := newTestHasher(t, algo, "0", bs)
			tokens := randomTokens(rand.New(rand.NewPCG(7, 8)), blocks*bs)
			c := h.NewChain("salt")
			h.Extend(&c, tokens, 1) // sizes the scratch buffer
			c.hashes = slices.Grow(c.hashes, blocks)
			n := 1
			allocs := testing.AllocsPerRun(blocks-2, func() {
				n++
				h.Extend(&c, tokens, n)
			})
			if allocs != 0 {
				t.Errorf("Extend allocates %v times per block", allocs)
			}
		})
	}
}

func mustCanonical(t testing.TB, v any) []byte {
	t.Helper()
	em, err := cbor.CanonicalEncOptions().EncMode()
	if err != nil {
		t.Fatal(err)
	}
	b, err := em.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func randomTokens(r *rand.Rand, n int) []uint32 {
	ts := make([]uint32, n)
	for i := range ts {
		ts[i] = r.Uint32N(200_000)
	}
	return ts
}

func putLE64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (8 * i))
	}
}

func beU64(b []byte) uint64 {
	var v uint64
	for _, x := range b[:8] {
		v = v<<8 | uint64(x)
	}
	return v
}
