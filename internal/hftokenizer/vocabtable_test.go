package hftokenizer

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestVocabTableAnswersLikeTheMapsItFreezes checks the frozen table against
// the map and slice it was built from, on a random vocabulary that also has
// ids without a token, two strings for one id and a key whose id carries a
// different string (the aliases).
func TestVocabTableAnswersLikeTheMapsItFreezes(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		count := 1 + rng.IntN(3000)
		tokens := make([]string, count)
		ids := map[string]uint32{}
		for id := range tokens {
			if rng.IntN(10) == 0 {
				continue // an id with no token
			}
			token := fmt.Sprintf("t%x-%d", rng.Uint32(), id)
			tokens[id] = token
			ids[token] = uint32(id)
		}
		for range 1 + rng.IntN(5) {
			ids[fmt.Sprintf("alias-%d", rng.Uint32())] = uint32(rng.IntN(count))
		}
		ids[""] = uint32(rng.IntN(count)) // an empty key is an alias too

		table := newVocabTable(tokens, ids)
		if table.size() != count {
			t.Fatalf("seed %d: size %d, want %d", seed, table.size(), count)
		}
		for id, want := range tokens {
			if got := table.token(uint32(id)); got != want {
				t.Fatalf("seed %d: token(%d) = %q, want %q", seed, id, got, want)
			}
		}
		if got := table.token(uint32(count)); got != "" {
			t.Fatalf("seed %d: token past the end = %q", seed, got)
		}
		for key, want := range ids {
			if got, ok := table.id(key); !ok || got != want {
				t.Fatalf("seed %d: id(%q) = %d, %v; want %d", seed, key, got, ok, want)
			}
		}
		for _, missing := range []string{"absent", "t", "alias-"} {
			if got, ok := table.id(missing); ok {
				t.Fatalf("seed %d: id(%q) = %d, want absent", seed, missing, got)
			}
		}
	}
}
