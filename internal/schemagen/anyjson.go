package schemagen

import "math/rand/v2"

// AnyObject returns a small JSON object (a few keys with strings, numbers,
// booleans, a short list) for "any JSON object" requests such as
// response_format json_object; the same bytes for the same seed.
func AnyObject(seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0xa11))
	g := &generator{rng: rng}
	keys := []string{"answer", "summary", "id", "items", "score", "valid", "tags", "name"}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	obj := object{}
	for _, key := range keys[:1+rng.IntN(4)] {
		var value any
		switch rng.IntN(4) {
		case 0:
			value = g.text(3, 40)
		case 1:
			value, _ = g.number(nil, true)
		case 2:
			value = rng.IntN(2) == 1
		default:
			list := []any{}
			for range 1 + rng.IntN(3) {
				list = append(list, words[rng.IntN(len(words))])
			}
			value = list
		}
		obj = append(obj, member{Key: key, Value: value})
	}
	return appendJSON(nil, obj)
}
