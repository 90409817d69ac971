package kv

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

// referenceXXH3 computes an adapter chain's xxh3 hashes from the formula in
// docs/kv-hashing.md, block by block, without the Hasher's incremental code.
func referenceXXH3(tokens []uint32, bs, blocks int, keys Keys) []uint64 {
	var out []uint64
	for i := range blocks {
		var in []byte
		for _, t := range tokens[i*bs : (i+1)*bs] {
			in = binary.LittleEndian.AppendUint32(in, t)
		}
		in = append(in, keys.Adapter.Name...)
		local := xxh3.HashSeed(in, 1337)
		switch {
		case i > 0:
			pair := binary.LittleEndian.AppendUint64(nil, out[i-1])
			pair = binary.LittleEndian.AppendUint64(pair, local)
			out = append(out, xxh3.HashSeed(pair, 1337))
		case keys.Salt != "":
			salted := append(binary.LittleEndian.AppendUint64(nil, local), keys.Salt...)
			out = append(out, xxh3.HashSeed(salted, 1337))
		default:
			out = append(out, local)
		}
	}
	return out
}

// referenceSHA256 computes sha256_cbor hashes with fxamacker/cbor's
// canonical encoder and vLLM's extra-key order: adapter name, then salt.
func referenceSHA256(t *testing.T, seed string, tokens []uint32, bs, blocks int, keys Keys) []uint64 {
	parent := sha256.Sum256(mustCanonical(t, seed))
	var out []uint64
	for i := range blocks {
		var extra []string
		if keys.Adapter.Name != "" {
			extra = append(extra, keys.Adapter.Name)
		}
		if i == 0 && keys.Salt != "" {
			extra = append(extra, keys.Salt)
		}
		var extraValue any
		if extra != nil {
			extraValue = extra
		}
		parent = sha256.Sum256(mustCanonical(t, []any{parent[:], tokens[i*bs : (i+1)*bs], extraValue}))
		out = append(out, binary.BigEndian.Uint64(parent[24:]))
	}
	return out
}

func TestAdapterHashesMatchTheReferenceFormula(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, keys := range []Keys{
		{},
		{Adapter: Adapter{ID: 1, Name: "sql"}},
		{Adapter: Adapter{ID: 7, Name: "an adapter name longer than twenty-three bytes"}},
		{Salt: "tenant-a", Adapter: Adapter{ID: 2, Name: "chat"}},
		{Salt: "tenant-a"},
	} {
		for _, bs := range []int{1, 4, 16} {
			tokens := randomTokens(r, 5*bs)
			x := newTestHasher(t, AlgoXXH3, "", bs)
			xc := x.NewKeyedChain(keys)
			x.Extend(&xc, tokens, 5)
			if want := referenceXXH3(tokens, bs, 5, keys); !slices.Equal(xc.Hashes(), want) {
				t.Errorf("xxh3 %+v bs=%d: %x, want %x", keys, bs, xc.Hashes(), want)
			}
			s := newTestHasher(t, AlgoSHA256CBOR, "0", bs)
			sc := s.NewKeyedChain(keys)
			s.Extend(&sc, tokens, 5)
			if want := referenceSHA256(t, "0", tokens, bs, 5, keys); !slices.Equal(sc.Hashes(), want) {
				t.Errorf("sha256_cbor %+v bs=%d: %x, want %x", keys, bs, sc.Hashes(), want)
			}
		}
	}
}

// TestAdapterHashVectors pins the values docs/kv-hashing.md lists.
func TestAdapterHashVectors(t *testing.T) {
	sql := Keys{Adapter: Adapter{ID: 1, Name: "sql"}}
	tests := []struct {
		name  string
		algo  string
		keys  Keys
		block int
		want  uint64
	}{
		{"xxh3 adapter sql S_0", AlgoXXH3, sql, 0, 0x4b717d986fb811f3},
		{"xxh3 adapter sql S_1", AlgoXXH3, sql, 1, 0xa2ae7fb695e2f2fc},
		{"sha256_cbor adapter sql S_0", AlgoSHA256CBOR, sql, 0, 0x9806590b5758dc84},
		{"sha256_cbor adapter sql S_1", AlgoSHA256CBOR, sql, 1, 0x326c1578294842fb},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHasher(t, tt.algo, "0", 4)
			c := h.NewKeyedChain(tt.keys)
			h.Extend(&c, vectorTokens, 2)
			if got := c.Hashes()[tt.block]; got != tt.want {
				t.Errorf("S_%d = %d (%#x), want %d (%#x)", tt.block, got, got, tt.want, tt.want)
			}
		})
	}
}

// TestSHA256AdapterBlockLayout checks the CBOR bytes docs/kv-hashing.md
// shows for block 0 under adapter "sql".
func TestSHA256AdapterBlockLayout(t *testing.T) {
	h := newTestHasher(t, AlgoSHA256CBOR, "0", 4)
	c := h.NewKeyedChain(Keys{Adapter: Adapter{ID: 1, Name: "sql"}})
	h.Extend(&c, vectorTokens, 1)
	want := append([]byte{0x83, 0x58, 0x20}, h.noneHash[:]...)
	want = append(want, 0x84, 1, 2, 3, 4, 0x81, 0x63, 's', 'q', 'l')
	if !slices.Equal(c.buf, want) {
		t.Errorf("CBOR of block 0 = % x, want % x", c.buf, want)
	}
}

func TestAdapterChangesEveryHash(t *testing.T) {
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		h := newTestHasher(t, algo, "0", 4)
		chain := func(keys Keys) []uint64 {
			c := h.NewKeyedChain(keys)
			h.Extend(&c, vectorTokens, 2)
			return slices.Clone(c.Hashes())
		}
		base := chain(Keys{})
		sql := chain(Keys{Adapter: Adapter{ID: 1, Name: "sql"}})
		chat := chain(Keys{Adapter: Adapter{ID: 2, Name: "chat"}})
		renumbered := chain(Keys{Adapter: Adapter{ID: 9, Name: "sql"}})
		if !slices.Equal(sql, renumbered) {
			t.Errorf("%s: the hash depends on the adapter id, not only its name: %x vs %x", algo, sql, renumbered)
		}
		for i := range base {
			if base[i] == sql[i] || base[i] == chat[i] || sql[i] == chat[i] {
				t.Errorf("%s block %d: base %#x, sql %#x, chat %#x; want all different", algo, i, base[i], sql[i], chat[i])
			}
		}
	}
}

func TestStoredEventsCarryTheAdapterAndItsExtraKeys(t *testing.T) {
	p := NewPool(8, 2, true)
	blocks, ok := p.Allocate(nil, 3)
	if !ok {
		t.Fatal("allocate failed")
	}
	keys := Keys{Salt: "s", Adapter: Adapter{ID: 3, Name: "sql"}}
	p.Cache(blocks, []uint64{10, 11, 12}, []uint32{1, 2, 3, 4, 5, 6}, 0, 3, keys)
	ev := p.TakeEvents()
	if len(ev) != 1 {
		t.Fatalf("events %+v, want one Stored", ev)
	}
	want := [][]string{{"sql", "s"}, {"sql"}, {"sql"}}
	if len(ev[0].ExtraKeys) != 3 {
		t.Fatalf("extra keys %q, want %q", ev[0].ExtraKeys, want)
	}
	for i := range want {
		if !slices.Equal(ev[0].ExtraKeys[i], want[i]) {
			t.Errorf("extra keys %q, want %q", ev[0].ExtraKeys, want)
		}
	}
	if ev[0].Adapter != keys.Adapter {
		t.Errorf("adapter %+v, want %+v", ev[0].Adapter, keys.Adapter)
	}
}

func TestExtendWithAnAdapterDoesNotAllocate(t *testing.T) {
	for _, algo := range []string{AlgoXXH3, AlgoSHA256CBOR} {
		const bs, blocks = 16, 32
		h := newTestHasher(t, algo, "0", bs)
		tokens := randomTokens(rand.New(rand.NewPCG(7, 8)), blocks*bs)
		c := h.NewKeyedChain(Keys{Salt: "salt", Adapter: Adapter{ID: 1, Name: "sql"}})
		h.Extend(&c, tokens, 1)
		c.hashes = slices.Grow(c.hashes, blocks)
		n := 1
		if allocs := testing.AllocsPerRun(blocks-2, func() { n++; h.Extend(&c, tokens, n) }); allocs != 0 {
			t.Errorf("%s: Extend allocates %v times per block", algo, allocs)
		}
	}
}
