// Package plan computes a request's output tokens up front:
// the request seed, the token at each position, the natural (EOS) end,
// reasoning framing and the stop rules, together with what the HTTP layer
// needs to render the visible text of each planned token.
package plan

import (
	"encoding/binary"

	"github.com/mocker-server/mocker-server/internal/tokenizer"
	"github.com/zeebo/xxh3"
)

// Phi is φ = 0x9E3779B97F4A7C15, the 64-bit golden-ratio increment of
// SplitMix64: adding multiples of it spreads consecutive positions apart.
const Phi uint64 = 0x9E3779B97F4A7C15

// Mix64 is the SplitMix64 finalizer:
// x ^= x>>30; x *= 0xBF58476D1CE4E5B9; x ^= x>>27; x *= 0x94D049BB133111EB; x ^= x>>31.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	x ^= x >> 31
	return x
}

// RequestSeed returns the output seed s: uint64(*requestSeed)
// (two's complement) when the request carries seed, otherwise
// XXH3-64(seed = uint64(serverSeed), bytes = prompt ids as little-endian
// uint32). Prompts of up to 256 tokens are hashed without allocating.
func RequestSeed(requestSeed *int64, serverSeed int64, prompt []uint32) uint64 {
	if requestSeed != nil {
		return uint64(*requestSeed)
	}
	var stack [1024]byte
	var buf []byte
	if 4*len(prompt) <= len(stack) {
		buf = stack[:0]
	} else {
		buf = make([]byte, 0, 4*len(prompt))
	}
	for _, id := range prompt {
		buf = binary.LittleEndian.AppendUint32(buf, id)
	}
	return xxh3.HashSeed(buf, uint64(serverSeed))
}

// draw returns r(c, pos) = mix64(s + (c·2³² + pos + 1)·φ).
func draw(s uint64, choice, pos int) uint64 {
	return Mix64(s + (uint64(choice)<<32+uint64(pos)+1)*Phi)
}

// TokenAt returns the built-in tokenizer's token id at position pos
// (0-based) of choice c: Draw of r(c, pos).
func TokenAt(s uint64, choice, pos int) uint32 {
	return builtinModel.Draw(draw(s, choice, pos))
}

var builtinModel = tokenizer.Builtin()

// ThinkLen returns the reasoning framing length for body length osl: 0 if
// osl < 2; else raw = floor(osl × ratio), 0 if raw == 0, else
// clamp(raw, 2, osl).
func ThinkLen(osl int, ratio float64) int {
	if osl < 2 || !(ratio > 0) {
		return 0
	}
	f := float64(osl) * ratio
	if f >= float64(osl) {
		return osl
	}
	raw := int(f) // floor: f ≥ 0
	switch {
	case raw == 0:
		return 0
	case raw < 2:
		return 2
	}
	return raw
}
