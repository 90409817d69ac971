package media

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"hash"

	"github.com/zeebo/blake3"
)

// newHasher returns the hash vLLM's _get_hasher_factory returns for alg.
func newHasher(alg HashAlgorithm) (hash.Hash, error) {
	switch alg {
	case "", HashBlake3:
		return blake3.New(), nil
	case HashSHA256:
		return sha256.New(), nil
	case HashSHA512:
		return sha512.New(), nil
	}
	return nil, fmt.Errorf("%w: hash algorithm %q (want blake3, sha256 or sha512)", ErrUnsupported, alg)
}

func hashBytes(data []byte, opt HashOptions) (string, error) {
	h, err := newHasher(opt.Algorithm)
	if err != nil {
		return "", err
	}
	if opt.ModelID != "" {
		h.Write([]byte("model_id"))
		h.Write([]byte(opt.ModelID))
	}
	h.Write([]byte("bytes"))
	h.Write(data)
	for _, kv := range opt.ProcessorKwargs {
		h.Write([]byte(kv.Key))
		h.Write([]byte(kv.Value))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
