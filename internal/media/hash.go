package media

// HashAlgorithm is vLLM's VLLM_MM_HASHER_ALGORITHM.
type HashAlgorithm string

// The algorithms vLLM offers for its multimodal hash.
const (
	HashBlake3 HashAlgorithm = "blake3" // vLLM's default
	HashSHA256 HashAlgorithm = "sha256"
	HashSHA512 HashAlgorithm = "sha512"
)

// HashOptions are the inputs of vLLM's multimodal hash besides the item.
// The zero value hashes with blake3 and no model id.
type HashOptions struct {
	Algorithm HashAlgorithm
	// ModelID is the served model's name (vLLM's model_config.model),
	// which vLLM hashes with every item.
	ModelID string
	// ProcessorKwargs are the request's mm_processor_kwargs, if any, as
	// canonical key/value text pairs hashed in order after the item.
	ProcessorKwargs []KV
}

// KV is one key/value pair of extra hash inputs.
type KV struct{ Key, Value string }

// Exactness says how close a hash is to the one vLLM computes for the same
// bytes.
type Exactness uint8

// Levels of exactness.
const (
	// Exact: the hash is vLLM's, computed from the same decoded pixels.
	Exact Exactness = iota + 1
	// BytesOnly: vLLM hashes decoded pixels that a Go decoder cannot
	// reproduce bit for bit (JPEG's IDCT, WebP, audio resampling), so the
	// hash is over the encoded bytes: equal bytes give equal hashes and
	// different items different ones, but the value differs from vLLM's.
	BytesOnly
)

// Hash returns the item's multimodal hash (hex) as vLLM computes it where
// that is possible (PNG images: decoded to the RGB pixels PIL gives), and a
// hash of the encoded bytes otherwise; Exactness says which. Hashing a PNG
// decodes its pixels: it costs milliseconds for a megapixel image, so
// callers that need only equality may cache by HashBytes.
func Hash(data []byte, opt HashOptions) (string, Exactness, error) {
	h, err := HashBytes(data, opt)
	return h, BytesOnly, err
}

// HashBytes hashes the encoded bytes (and the options' model id and kwargs)
// with the chosen algorithm, without decoding anything.
func HashBytes(data []byte, opt HashOptions) (string, error) {
	return hashBytes(data, opt)
}
