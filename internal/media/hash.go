package media

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"

	"github.com/zeebo/blake3"
)

// HashAlgorithm is vLLM's multimodal hash algorithm (--mm-hasher-algorithm,
// formerly the VLLM_MM_HASHER_ALGORITHM environment variable).
type HashAlgorithm string

// The algorithms vLLM offers for its multimodal hash.
const (
	HashBlake3 HashAlgorithm = "blake3" // vLLM's default
	HashSHA256 HashAlgorithm = "sha256"
	HashSHA512 HashAlgorithm = "sha512"
)

// HashScheme is the layout of the bytes vLLM feeds its hasher, which has
// changed between vLLM versions (docs/multimodal.md has the history).
type HashScheme uint8

// The hash layouts.
const (
	// SchemeKeyed is MultiModalHasher with keyword arguments hashed in
	// sorted order, each leaf as its dotted key's UTF-8 bytes followed by the
	// value's bytes, and an image loaded from bytes (MediaWithBytes) hashed
	// as its original encoded bytes. The default.
	SchemeKeyed HashScheme = iota
	// SchemeFramed is the later layout in which every chunk is preceded by
	// its 8-byte little-endian length and every value by a container tag
	// (0 none, 1 sequence, 2 mapping, 3 leaf), so that the stream is
	// uniquely decodable.
	SchemeFramed
)

// String returns the scheme's name ("keyed", "framed").
func (s HashScheme) String() string {
	if s == SchemeFramed {
		return "framed"
	}
	return "keyed"
}

// HashOptions are the inputs of vLLM's multimodal hash besides the item.
// The zero value hashes with blake3, the keyed layout and no model id.
type HashOptions struct {
	Algorithm HashAlgorithm
	Scheme    HashScheme
	// ModelID is vLLM's model_config.model: the --model argument (a
	// Hugging Face id or a path), not --served-model-name.
	ModelID string
	// MMProcessorKwargs are the request's mm_processor_kwargs, which vLLM
	// hashes with every item when non-empty: the request's alone (the
	// server's --mm-processor-kwargs are merged in only when its processor
	// is called), and without the other modalities'
	// images_kwargs/videos_kwargs/audio_kwargs groups. Values are JSON
	// values as encoding/json decodes them with UseNumber: json.Number,
	// string, bool, nil, []any, map[string]any.
	MMProcessorKwargs []Field
	// MediaIOKwargs are the modality's media_io_kwargs, hashed like
	// MMProcessorKwargs when non-empty.
	MediaIOKwargs []Field
}

// Field is one key of a keyword-argument mapping, in the mapping's order.
type Field struct {
	Key   string
	Value any
}

// Exactness says how close a hash is to the one vLLM computes for the same
// bytes.
type Exactness uint8

// Levels of exactness.
const (
	// Exact: the hash is vLLM's for the same bytes and options.
	Exact Exactness = iota + 1
	// BytesOnly: vLLM hashes decoded data that a Go reader cannot reproduce
	// bit for bit (audio resampled by librosa, video frames and their
	// sampling metadata), so the hash is over the encoded bytes: equal bytes
	// give equal hashes and different items different ones, but the value
	// differs from vLLM's.
	BytesOnly
)

// String returns "exact" or "bytes-only".
func (e Exactness) String() string {
	if e == Exact {
		return "exact"
	}
	return "bytes-only"
}

// Hash returns the item's multimodal hash (hex) for an item of the given
// kind with encoded bytes data, as vLLM's processor computes it
// (ProcessorInputs.get_mm_hashes → MultiModalHasher.hash_kwargs with the
// model id, the item and the non-empty hash factors). Images are exact: vLLM
// hashes an image loaded from bytes as those bytes (MediaWithBytes), so no
// pixel is decoded and any image format is exact. Embeddings are exact
// when ReadTensor reads the payload: vLLM hashes the loaded tensor (its
// dtype, shape and C-order elements), which HashEmbeds serializes the same
// way. Audio and video are BytesOnly. The cost is one pass of the hash over
// data (blake3: about 1 GB/s and up on one core).
func Hash(kind Kind, data []byte, opt HashOptions) (string, Exactness, error) {
	var modality string
	exact := BytesOnly
	switch kind {
	case KindImage:
		modality, exact = "image", Exact
	case KindAudio:
		modality = "audio"
	case KindVideo:
		modality = "video"
	case KindEmbeds, KindAudioEmbeds:
		modality = kind.Modality()
		if t, err := ReadTensor(data); err == nil {
			if len(t.Shape) == 3 && t.Shape[0] == 1 {
				// vLLM's chat parser takes a (1, tokens, hidden) batch
				// of one as its item t[0].
				t, _ = t.Index(0)
			}
			h, err := HashEmbeds(modality, []NamedTensor{{Tensor: t}}, opt)
			return h, Exact, err
		}
	default:
		return "", 0, fmt.Errorf("%w: cannot hash a %s item", ErrUnsupported, kind)
	}
	// The MediaWithBytes leaf: its serialization is
	// iter_item_to_bytes(modality, bytes) under the outer key.
	h, err := hashKwargs(modality, func(w *hashWriter) {
		w.key(modality)
		if w.framed {
			w.raw(tagLeaf)
		}
		w.item(modality, bytesLeaf(data))
	}, opt)
	return h, exact, err
}

// NamedTensor is one tensor of an embeddings item: the item itself when
// Name is empty, else one key of vLLM's dict form (Qwen-VL's image_embeds
// and image_grid_thw).
type NamedTensor struct {
	Name   string
	Tensor Tensor
}

// HashEmbeds returns vLLM's multimodal hash of an embeddings item of the
// modality ("image", "audio"): one tensor (a single unnamed NamedTensor),
// or the dict form's mapping of its tensors in the given order. vLLM's
// MultiModalHasher.serialize_item writes a tensor as its NumPy array
// (dtype.str, shape, C-order bytes) under the key "tensor"; a bfloat16
// tensor, which NumPy lacks, as {original_dtype, original_shape, data: its
// bytes as a uint8 array}.
func HashEmbeds(modality string, parts []NamedTensor, opt HashOptions) (string, error) {
	var v any
	if len(parts) == 1 && parts[0].Name == "" {
		v = tensorLeaf(parts[0].Tensor)
	} else {
		m := make(mapping, len(parts))
		for i, p := range parts {
			if p.Name == "" {
				return "", fmt.Errorf("%w: an unnamed tensor in a dict-form item", ErrUnsupported)
			}
			m[i] = kv{p.Name, tensorLeaf(p.Tensor)}
		}
		v = m
	}
	return hashKwargs(modality, func(w *hashWriter) { w.item(modality, v) }, opt)
}

// hashKwargs is MultiModalHasher.hash_kwargs(model_id=…, <modality>=item,
// **factors) with the keys in sorted order; item writes the modality's key
// and value.
func hashKwargs(modality string, item func(w *hashWriter), opt HashOptions) (string, error) {
	h, err := newHasher(opt.Algorithm)
	if err != nil {
		return "", err
	}
	kw := mapping{{modality, nil}}
	if len(opt.MediaIOKwargs) > 0 {
		kw = append(kw, kv{"media_io_kwargs", mapping{{modality, fieldsMapping(opt.MediaIOKwargs)}}})
	}
	if pk := scopedKwargs(opt.MMProcessorKwargs, modality); len(pk) > 0 {
		kw = append(kw, kv{"mm_processor_kwargs", pk})
	}
	kw = append(kw, kv{"model_id", opt.ModelID})
	slices.SortStableFunc(kw, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	w := hashWriter{h: h, framed: opt.Scheme == SchemeFramed}
	for _, e := range kw {
		if e.k == modality {
			item(&w)
			continue
		}
		w.item(e.k, e.v)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

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

// The value model of the serializer: what Python's MultiModalHasher sees.
type (
	bytesLeaf []byte
	// tensorLeaf is a torch.Tensor, ndarrayLeaf the NumPy array
	// serialize_item turns it into.
	tensorLeaf  Tensor
	ndarrayLeaf struct {
		dtype string
		shape []uint64
		data  []byte
	}
	kv struct {
		k string
		v any
	}
	mapping []kv
)

func fieldsMapping(fs []Field) mapping {
	m := make(mapping, len(fs))
	for i, f := range fs {
		m[i] = kv{f.Key, f.Value}
	}
	return m
}

var (
	tagNone     = []byte{0}
	tagSequence = []byte{1}
	tagMapping  = []byte{2}
	tagLeaf     = []byte{3}
)

// hashWriter feeds a hash the byte stream of MultiModalHasher's
// iter_item_to_bytes in one of its two layouts.
type hashWriter struct {
	h      hash.Hash
	framed bool
	buf    [8]byte
}

func (w *hashWriter) raw(b []byte) { w.h.Write(b) }

func (w *hashWriter) length(n int) {
	binary.LittleEndian.PutUint64(w.buf[:], uint64(n))
	w.h.Write(w.buf[:])
}

// chunk writes one serialized chunk: length-prefixed when framed.
func (w *hashWriter) chunk(b []byte) {
	if w.framed {
		w.length(len(b))
	}
	w.h.Write(b)
}

func (w *hashWriter) key(k string) { w.chunk([]byte(k)) }

// item is iter_item_to_bytes(key, v).
func (w *hashWriter) item(key string, v any) {
	if w.framed {
		w.key(key)
		w.value(v)
		return
	}
	// The keyed layout flattens containers into dotted keys.
	switch x := v.(type) {
	case nil:
		w.key(key)
	case []any:
		for i, e := range x {
			w.item(fmt.Sprintf("%s.%d", key, i), e)
		}
	case map[string]any:
		for _, e := range sortedMap(x) {
			w.item(key+"."+e.k, e.v)
		}
	case mapping:
		for _, e := range x {
			w.item(key+"."+e.k, e.v)
		}
	case []Field:
		w.item(key, fieldsMapping(x))
	default:
		w.key(key)
		w.leaf(v)
	}
}

// value is the framed layout's iter_value_to_bytes(v).
func (w *hashWriter) value(v any) {
	switch x := v.(type) {
	case nil:
		w.raw(tagNone)
	case []any:
		w.raw(tagSequence)
		w.length(len(x))
		for _, e := range x {
			w.value(e)
		}
	case map[string]any:
		w.value(sortedMap(x))
	case []Field:
		w.value(fieldsMapping(x))
	case mapping:
		w.raw(tagMapping)
		w.length(len(x))
		for _, e := range x {
			w.key(e.k)
			w.value(e.v)
		}
	default:
		w.raw(tagLeaf)
		w.leaf(v)
	}
}

// leaf is serialize_item for the scalar kinds a JSON request can carry:
// str as UTF-8, int as a NumPy int64, float as a float64, bool as a NumPy
// bool (one byte), bytes as themselves.
func (w *hashWriter) leaf(v any) {
	switch x := v.(type) {
	case tensorLeaf:
		w.tensor(Tensor(x))
	case ndarrayLeaf:
		w.ndarray(x)
	case bytesLeaf:
		w.chunk(x)
	case []byte:
		w.chunk(x)
	case string:
		w.chunk([]byte(x))
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		w.chunk([]byte{b})
	case int:
		w.int64(int64(x))
	case int64:
		w.int64(x)
	case float64:
		w.float64(x)
	case interface{ Int64() (int64, error) }: // json.Number
		if i, err := x.Int64(); err == nil && !strings.ContainsAny(fmt.Sprint(x), ".eE") {
			w.int64(i)
			return
		}
		f, _ := x.(interface{ Float64() (float64, error) }).Float64()
		w.float64(f)
	default:
		// Python would pickle anything else; no JSON value gets here.
		w.chunk([]byte(fmt.Sprint(x)))
	}
}

// tensor is serialize_item(torch.Tensor): iter_item_to_bytes("tensor",
// tensor.numpy()), or for bfloat16 the dict of its original dtype and shape
// and its bytes viewed as uint8.
func (w *hashWriter) tensor(t Tensor) {
	data := t.view.cBytes()
	if t.Dtype == "bfloat16" {
		shape := make([]any, len(t.Shape))
		for i, n := range t.Shape {
			shape[i] = int64(n)
		}
		w.item("tensor", mapping{
			{"original_dtype", "torch.bfloat16"},
			{"original_shape", shape},
			{"data", ndarrayLeaf{dtype: "|u1", shape: []uint64{uint64(len(data))}, data: data}},
		})
		return
	}
	w.item("tensor", ndarrayLeaf{dtype: t.view.np, shape: t.view.shape, data: data})
}

// ndarray is serialize_item(np.ndarray) of an array of at least one
// dimension: iter_item_to_bytes("ndarray", {dtype: dtype.str, shape, data}).
func (w *hashWriter) ndarray(a ndarrayLeaf) {
	shape := make([]any, len(a.shape))
	for i, n := range a.shape {
		shape[i] = int64(n)
	}
	w.item("ndarray", mapping{{"dtype", a.dtype}, {"shape", shape}, {"data", bytesLeaf(a.data)}})
}

func (w *hashWriter) int64(i int64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(i))
	w.chunk(b[:])
}

func (w *hashWriter) float64(f float64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
	w.chunk(b[:])
}

// sortedMap gives a decoded JSON object a deterministic order. Python
// keeps a dict's insertion order, which is the JSON text's; a caller that
// has that order passes a []Field instead.
func sortedMap(m map[string]any) mapping {
	out := make(mapping, 0, len(m))
	for k, v := range m {
		out = append(out, kv{k, v})
	}
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.k, b.k) })
	return out
}

// modalityKwargs are the HF processor's modality-scoped kwargs groups.
var modalityKwargs = map[string]string{"image": "images_kwargs", "video": "videos_kwargs", "audio": "audio_kwargs"}

// scopedKwargs keeps the flat kwargs and the item's own modality group,
// dropping the other modalities' groups, as get_mm_item_hash does so that
// an image's hash does not change with the request's video settings.
func scopedKwargs(fs []Field, modality string) mapping {
	m := make(mapping, 0, len(fs))
	for _, f := range fs {
		if g, scoped := isModalityGroup(f.Key); scoped && g != modality {
			continue
		}
		m = append(m, kv{f.Key, f.Value})
	}
	return m
}

func isModalityGroup(key string) (modality string, ok bool) {
	for mod, k := range modalityKwargs {
		if k == key {
			return mod, true
		}
	}
	return "", false
}
