package config

import (
	"encoding/json"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// TestPYTHONHASHSEEDReachesTheHasher pins vLLM's seed rule end to end now
// that internal/kv reads no environment: PYTHONHASHSEED, read through the
// injectable LookupEnv, fills an empty hash_seed, travels in engine.Config
// and gives kv.NewHasher the seed-"42" test vector of docs/kv-hashing.md; an
// explicit hash_seed wins; neither gives the seed-"0" vector.
func TestPYTHONHASHSEEDReachesTheHasher(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		seed any // hash_seed overlay; nil = unset
		want uint64
	}{
		{"empty seed, env unset means 0", nil, nil, 2164874634404590027},
		{"empty seed takes PYTHONHASHSEED", map[string]string{"PYTHONHASHSEED": "42"}, nil, 5988051177307384287},
		{"empty PYTHONHASHSEED means 0", map[string]string{"PYTHONHASHSEED": ""}, nil, 2164874634404590027},
		{"explicit seed beats PYTHONHASHSEED", map[string]string{"PYTHONHASHSEED": "42"}, "0", 2164874634404590027},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ov := map[string]any{"prefix_caching_hash_algo": "sha256_cbor", "block_size": json.Number("4")}
			if tt.seed != nil {
				ov["hash_seed"] = tt.seed
			}
			cfg, _ := mustLoad(t, LoadOptions{Overlay: ov, LookupEnv: func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			}})
			ec := cfg.EngineConfig(nil)
			h, err := kv.NewHasher(ec.HashAlgo, ec.HashSeed, ec.BlockSize)
			if err != nil {
				t.Fatal(err)
			}
			c := h.NewChain("")
			h.Extend(&c, []uint32{1, 2, 3, 4}, 1)
			if got := c.Hashes()[0]; got != tt.want {
				t.Errorf("S_0 = %#x, want %#x (hash_seed %q)", got, tt.want, ec.HashSeed)
			}
		})
	}
}
