package media

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// zipMagic opens a ZIP local file header: torch.save's archive format
// (the default since torch 1.6).
var zipMagic = []byte("PK\x03\x04")

// Bounds on a torch.save archive's pickle. A single tensor's data.pkl is
// about 150 bytes; these leave room for any tensor and refuse anything
// built to exhaust memory.
const (
	torchMaxPickle  = 64 << 10
	torchMaxFiles   = 64
	torchMaxStack   = 64
	torchMaxMemo    = 256
	torchMaxString  = 256
	torchMaxDims    = 8
	torchMaxElement = 1 << 40
)

// torchStorages maps the storage classes torch.save names (torch.<X>Storage)
// to the dtype, element size and NumPy dtype string (what tensor.numpy()
// reports as dtype.str on a little-endian machine; bfloat16 has none). An
// embedding is floating point; int64 and int32 are read for Qwen-VL's
// image_grid_thw.
var torchStorages = map[string]struct {
	dtype string
	size  uint64
	np    string
}{
	"FloatStorage":    {"float32", 4, "<f4"},
	"HalfStorage":     {"float16", 2, "<f2"},
	"BFloat16Storage": {"bfloat16", 2, ""},
	"DoubleStorage":   {"float64", 8, "<f8"},
	"LongStorage":     {"int64", 8, "<i8"},
	"IntStorage":      {"int32", 4, "<i4"},
}

// torchTensor is the one dense tensor of a torch.save archive: its view
// (offset, shape and strides in elements) over its storage, and the
// storage's bytes as they lie in the archive.
type torchTensor struct {
	dtype, np     string
	size          uint64 // bytes per element
	offset        uint64
	shape, stride []uint64
	storage       []byte
}

// probeTorch reads the shape and dtype of an embedding tensor written by
// torch.save (readTorch), which must be 2-D or 3-D floating point.
func probeTorch(data []byte) (Item, error) {
	const what = "image_embeds"
	t, err := readTorch(data, what)
	if err != nil {
		return Item{}, err
	}
	if t.np == "<i8" || t.np == "<i4" {
		return Item{}, fmt.Errorf("%w: %s: a tensor of %s (torch.LongStorage or IntStorage); an embedding is floating point", ErrUnsupported, what, t.dtype)
	}
	if len(t.shape) < 2 || len(t.shape) > 3 {
		return Item{}, fmt.Errorf("%w: %s of shape %v (want (tokens, hidden) or (items, tokens, hidden))", ErrCorrupt, what, t.shape)
	}
	it := Item{Kind: KindEmbeds, Size: len(data), EmbedTokens: int(t.shape[len(t.shape)-2]), EmbedDtype: t.dtype,
		EmbedHidden: int(t.shape[len(t.shape)-1])}
	if len(t.shape) == 3 {
		it.Frames = int(t.shape[0])
	}
	return it, nil
}

// readTorch reads the tensor of a torch.save archive: a ZIP holding
// <archive>/data.pkl and <archive>/data/<key>. The pickle is interpreted by
// a restricted reader that knows only the opcodes and globals torch.save
// writes for one dense tensor (as torch.load's weights_only unpickler
// restricts them, but narrower): it executes nothing, and any other opcode
// or global is ErrUnsupported. The view is checked against the storage's
// declared element count and the storage entry's bytes (a shape the data
// cannot hold: ErrCorrupt), and may not reach more elements than the
// storage has (an expanded view, stride 0, would make a few bytes stand for
// any number of tokens: ErrUnsupported). Only the archive's directory and
// pickle are read; the storage is returned as a slice of data.
func readTorch(data []byte, what string) (torchTensor, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return torchTensor{}, fmt.Errorf("%w: %s: torch.save archive: %v", ErrCorrupt, what, err)
	}
	if len(zr.File) > torchMaxFiles {
		return torchTensor{}, fmt.Errorf("%w: %s: torch.save archive of %d files", ErrUnsupported, what, len(zr.File))
	}
	var pkl *zip.File
	for _, f := range zr.File {
		if dir, ok := strings.CutSuffix(f.Name, "/data.pkl"); ok && dir != "" && !strings.Contains(dir, "/") {
			pkl = f
			break
		}
	}
	if pkl == nil {
		return torchTensor{}, fmt.Errorf("%w: %s: a ZIP without a torch.save data.pkl", ErrUnsupported, what)
	}
	prefix := strings.TrimSuffix(pkl.Name, "data.pkl")
	rc, err := pkl.Open()
	if err != nil {
		return torchTensor{}, fmt.Errorf("%w: %s: data.pkl: %v", ErrCorrupt, what, err)
	}
	code, err := io.ReadAll(io.LimitReader(rc, torchMaxPickle+1))
	rc.Close()
	if err != nil {
		return torchTensor{}, fmt.Errorf("%w: %s: data.pkl: %v", ErrCorrupt, what, err)
	}
	if len(code) > torchMaxPickle {
		return torchTensor{}, fmt.Errorf("%w: %s: data.pkl over %d bytes", ErrTooLarge, what, torchMaxPickle)
	}
	t, err := unpickleTensor(code)
	if err != nil {
		return torchTensor{}, fmt.Errorf("%s: %w", what, err)
	}
	var st *zip.File
	for _, f := range zr.File {
		if f.Name == prefix+"data/"+t.storage.key {
			st = f
			break
		}
	}
	if st == nil {
		return torchTensor{}, fmt.Errorf("%w: %s: storage %q missing from the archive", ErrCorrupt, what, t.storage.key)
	}
	// torch.save stores entries uncompressed; require that, so the
	// storage's size is the bytes actually present, not a header's word.
	off, err := st.DataOffset()
	if err != nil || st.Method != zip.Store || st.CompressedSize64 != st.UncompressedSize64 ||
		uint64(off) > uint64(len(data)) || st.CompressedSize64 > uint64(len(data))-uint64(off) {
		return torchTensor{}, fmt.Errorf("%w: %s: storage entry %s is not stored whole in the archive", ErrCorrupt, what, st.Name)
	}
	if t.storage.numel > torchMaxElement || t.storage.numel*t.storage.size > st.UncompressedSize64 {
		return torchTensor{}, fmt.Errorf("%w: %s: storage of %d %s elements in %d bytes", ErrCorrupt, what, t.storage.numel, t.storage.dtype, st.UncompressedSize64)
	}
	shape := fmt.Sprint(t.shape)
	// The last element the view reaches must lie inside the storage.
	last, elems := t.offset, uint64(1)
	for i, n := range t.shape {
		if n == 0 {
			return torchTensor{}, fmt.Errorf("%w: %s of shape %s with no elements", ErrCorrupt, what, shape)
		}
		last += (n - 1) * t.stride[i]
		elems *= n
		if last > torchMaxElement || elems > torchMaxElement {
			return torchTensor{}, fmt.Errorf("%w: %s of shape %s", ErrTooLarge, what, shape)
		}
	}
	if last >= t.storage.numel {
		return torchTensor{}, fmt.Errorf("%w: %s: shape %s at offset %d reaches element %d of a %d-element storage", ErrCorrupt, what, shape, t.offset, last, t.storage.numel)
	}
	if elems > t.storage.numel {
		return torchTensor{}, fmt.Errorf("%w: %s: a view of shape %s over a %d-element storage repeats elements (an expanded tensor); save tensor.contiguous()", ErrUnsupported, what, shape, t.storage.numel)
	}
	return torchTensor{
		dtype: t.storage.dtype, np: t.storage.np, size: t.storage.size,
		offset: t.offset, shape: t.shape, stride: t.stride,
		storage: data[uint64(off) : uint64(off)+t.storage.numel*t.storage.size],
	}, nil
}

// Values of the restricted unpickler.
type (
	pyMark    struct{}
	pyTuple   []any
	pyGlobal  struct{ module, name string }
	pyODict   struct{} // an empty collections.OrderedDict (backward hooks)
	pyStorage struct {
		dtype string
		np    string
		size  uint64
		key   string
		numel uint64
	}
	pyTensor struct {
		storage       pyStorage
		offset        uint64
		shape, stride []uint64
	}
)

// unpickleTensor runs a torch.save data.pkl that builds one tensor. Every
// length is checked against the bytes left before anything is allocated,
// and the stack and memo are bounded.
func unpickleTensor(code []byte) (pyTensor, error) {
	var (
		stack []any
		memo  = map[uint32]any{}
		pos   int
	)
	corrupt := func(format string, a ...any) error {
		return fmt.Errorf("%w: data.pkl at byte %d: %s", ErrCorrupt, pos, fmt.Sprintf(format, a...))
	}
	take := func(n int) ([]byte, error) {
		if n < 0 || n > len(code)-pos {
			return nil, corrupt("%d bytes past the end", n)
		}
		b := code[pos : pos+n]
		pos += n
		return b, nil
	}
	push := func(v any) error {
		if len(stack) >= torchMaxStack {
			return fmt.Errorf("%w: data.pkl: stack deeper than %d", ErrUnsupported, torchMaxStack)
		}
		stack = append(stack, v)
		return nil
	}
	pop := func() (any, error) {
		if len(stack) == 0 {
			return nil, corrupt("pop from an empty stack")
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := v.(pyMark); ok {
			return nil, corrupt("a mark where a value belongs")
		}
		return v, nil
	}
	popTuple := func(n int) (pyTuple, error) {
		t := make(pyTuple, n)
		for i := n - 1; i >= 0; i-- {
			v, err := pop()
			if err != nil {
				return nil, err
			}
			t[i] = v
		}
		return t, nil
	}
	line := func() (string, error) {
		end := bytes.IndexByte(code[pos:], '\n')
		if end < 0 || end > torchMaxString {
			return "", corrupt("unterminated GLOBAL")
		}
		s := string(code[pos : pos+end])
		pos += end + 1
		return s, nil
	}
	for pos < len(code) {
		op := code[pos]
		pos++
		switch op {
		case 0x80: // PROTO
			b, err := take(1)
			if err != nil {
				return pyTensor{}, err
			}
			if b[0] < 2 || b[0] > 5 {
				return pyTensor{}, fmt.Errorf("%w: data.pkl: pickle protocol %d", ErrUnsupported, b[0])
			}
		case 0x95: // FRAME (protocol 4): a length to skip
			if _, err := take(8); err != nil {
				return pyTensor{}, err
			}
		case 'c': // GLOBAL
			mod, err := line()
			if err != nil {
				return pyTensor{}, err
			}
			name, err := line()
			if err != nil {
				return pyTensor{}, err
			}
			g := pyGlobal{mod, name}
			_, storage := torchStorages[name]
			if g != (pyGlobal{"torch._utils", "_rebuild_tensor_v2"}) && g != (pyGlobal{"collections", "OrderedDict"}) &&
				!(mod == "torch" && storage) {
				return pyTensor{}, fmt.Errorf("%w: data.pkl: global %.64s.%.64s (only a dense floating-point or int64 tensor is read)", ErrUnsupported, mod, name)
			}
			if err := push(g); err != nil {
				return pyTensor{}, err
			}
		case 'q', 'r', 0x94: // BINPUT, LONG_BINPUT, MEMOIZE
			var idx uint32
			switch op {
			case 'q':
				b, err := take(1)
				if err != nil {
					return pyTensor{}, err
				}
				idx = uint32(b[0])
			case 'r':
				b, err := take(4)
				if err != nil {
					return pyTensor{}, err
				}
				idx = binary.LittleEndian.Uint32(b)
			default:
				idx = uint32(len(memo))
			}
			if len(stack) == 0 {
				return pyTensor{}, corrupt("memoize an empty stack")
			}
			if _, ok := memo[idx]; !ok && len(memo) >= torchMaxMemo {
				return pyTensor{}, fmt.Errorf("%w: data.pkl: memo over %d entries", ErrUnsupported, torchMaxMemo)
			}
			memo[idx] = stack[len(stack)-1]
		case 'h', 'j': // BINGET, LONG_BINGET
			var idx uint32
			if op == 'h' {
				b, err := take(1)
				if err != nil {
					return pyTensor{}, err
				}
				idx = uint32(b[0])
			} else {
				b, err := take(4)
				if err != nil {
					return pyTensor{}, err
				}
				idx = binary.LittleEndian.Uint32(b)
			}
			v, ok := memo[idx]
			if !ok {
				return pyTensor{}, corrupt("memo %d unset", idx)
			}
			if err := push(v); err != nil {
				return pyTensor{}, err
			}
		case '(': // MARK
			if err := push(pyMark{}); err != nil {
				return pyTensor{}, err
			}
		case 'X', 0x8c: // BINUNICODE, SHORT_BINUNICODE
			var n int
			if op == 'X' {
				b, err := take(4)
				if err != nil {
					return pyTensor{}, err
				}
				n = int(binary.LittleEndian.Uint32(b) & 0x7fffffff)
			} else {
				b, err := take(1)
				if err != nil {
					return pyTensor{}, err
				}
				n = int(b[0])
			}
			if n > torchMaxString {
				return pyTensor{}, fmt.Errorf("%w: data.pkl: a %d-byte string", ErrUnsupported, n)
			}
			b, err := take(n)
			if err != nil {
				return pyTensor{}, err
			}
			if err := push(string(b)); err != nil {
				return pyTensor{}, err
			}
		case 'K', 'M', 'J', 0x8a: // BININT1, BININT2, BININT, LONG1
			var v int64
			switch op {
			case 'K':
				b, err := take(1)
				if err != nil {
					return pyTensor{}, err
				}
				v = int64(b[0])
			case 'M':
				b, err := take(2)
				if err != nil {
					return pyTensor{}, err
				}
				v = int64(binary.LittleEndian.Uint16(b))
			case 'J':
				b, err := take(4)
				if err != nil {
					return pyTensor{}, err
				}
				v = int64(int32(binary.LittleEndian.Uint32(b)))
			default:
				nb, err := take(1)
				if err != nil {
					return pyTensor{}, err
				}
				if nb[0] > 8 {
					return pyTensor{}, fmt.Errorf("%w: data.pkl: a %d-byte integer", ErrUnsupported, nb[0])
				}
				b, err := take(int(nb[0]))
				if err != nil {
					return pyTensor{}, err
				}
				var u uint64
				for i := len(b) - 1; i >= 0; i-- {
					u = u<<8 | uint64(b[i])
				}
				if n := len(b); n > 0 && n < 8 && b[n-1]&0x80 != 0 {
					u -= 1 << (8 * n) // two's complement of n bytes
				}
				v = int64(u)
			}
			if err := push(v); err != nil {
				return pyTensor{}, err
			}
		case 0x88, 0x89: // NEWTRUE, NEWFALSE
			if err := push(op == 0x88); err != nil {
				return pyTensor{}, err
			}
		case ')': // EMPTY_TUPLE
			if err := push(pyTuple{}); err != nil {
				return pyTensor{}, err
			}
		case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
			t, err := popTuple(int(op-0x85) + 1)
			if err != nil {
				return pyTensor{}, err
			}
			stack = append(stack, t)
		case 't': // TUPLE: everything above the last mark
			m := len(stack) - 1
			for m >= 0 {
				if _, ok := stack[m].(pyMark); ok {
					break
				}
				m--
			}
			if m < 0 {
				return pyTensor{}, corrupt("TUPLE without a mark")
			}
			t := append(pyTuple{}, stack[m+1:]...)
			stack = append(stack[:m], t)
		case 'Q': // BINPERSID: torch's storage reference
			v, err := pop()
			if err != nil {
				return pyTensor{}, err
			}
			s, err := persistentStorage(v)
			if err != nil {
				return pyTensor{}, err
			}
			stack = append(stack, s)
		case 'R': // REDUCE
			args, err := pop()
			if err != nil {
				return pyTensor{}, err
			}
			fn, err := pop()
			if err != nil {
				return pyTensor{}, err
			}
			v, err := reduce(fn, args)
			if err != nil {
				return pyTensor{}, err
			}
			stack = append(stack, v)
		case '.': // STOP
			v, err := pop()
			if err != nil {
				return pyTensor{}, err
			}
			t, ok := v.(pyTensor)
			if !ok || len(stack) != 0 {
				return pyTensor{}, fmt.Errorf("%w: data.pkl holds %s, not one tensor", ErrUnsupported, pyTypeName(v))
			}
			return t, nil
		case '}', ']', 'u', 's', 'a', 'e':
			return pyTensor{}, fmt.Errorf("%w: data.pkl builds a dict or list, not one tensor (Qwen2.5-VL's {image_embeds, image_grid_thw} form is not read)", ErrUnsupported)
		default:
			return pyTensor{}, fmt.Errorf("%w: data.pkl: pickle opcode 0x%02x", ErrUnsupported, op)
		}
	}
	return pyTensor{}, corrupt("no STOP")
}

// persistentStorage reads torch's persistent id of a storage:
// ('storage', torch.<X>Storage, key, location, numel).
func persistentStorage(v any) (pyStorage, error) {
	t, ok := v.(pyTuple)
	if !ok || len(t) != 5 || t[0] != "storage" {
		return pyStorage{}, fmt.Errorf("%w: data.pkl: persistent id %s", ErrUnsupported, pyTypeName(v))
	}
	g, ok1 := t[1].(pyGlobal)
	key, ok2 := t[2].(string)
	_, ok3 := t[3].(string)
	numel, ok4 := t[4].(int64)
	st, ok5 := torchStorages[g.name]
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || g.module != "torch" || numel < 0 || key == "" || strings.ContainsAny(key, "/\\") {
		return pyStorage{}, fmt.Errorf("%w: data.pkl: malformed storage reference", ErrCorrupt)
	}
	return pyStorage{dtype: st.dtype, np: st.np, size: st.size, key: key, numel: uint64(numel)}, nil
}

// reduce applies the two callables torch.save uses for a dense tensor.
func reduce(fn, args any) (any, error) {
	a, ok := args.(pyTuple)
	if !ok {
		return nil, fmt.Errorf("%w: data.pkl: REDUCE arguments are not a tuple", ErrCorrupt)
	}
	switch fn {
	case pyGlobal{"collections", "OrderedDict"}:
		if len(a) != 0 {
			return nil, fmt.Errorf("%w: data.pkl: a non-empty OrderedDict", ErrUnsupported)
		}
		return pyODict{}, nil
	case pyGlobal{"torch._utils", "_rebuild_tensor_v2"}:
		// (storage, storage_offset, size, stride, requires_grad,
		// backward_hooks[, metadata]); metadata would need a dict, refused
		// above, so six arguments.
		if len(a) != 6 {
			return nil, fmt.Errorf("%w: data.pkl: _rebuild_tensor_v2 with %d arguments", ErrUnsupported, len(a))
		}
		st, ok1 := a[0].(pyStorage)
		off, ok2 := a[1].(int64)
		shape, ok3 := dims(a[2])
		stride, ok4 := dims(a[3])
		_, ok5 := a[4].(bool)
		_, ok6 := a[5].(pyODict)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || off < 0 || off > torchMaxElement || len(shape) != len(stride) {
			return nil, fmt.Errorf("%w: data.pkl: malformed _rebuild_tensor_v2 arguments", ErrCorrupt)
		}
		return pyTensor{storage: st, offset: uint64(off), shape: shape, stride: stride}, nil
	}
	return nil, fmt.Errorf("%w: data.pkl: REDUCE of %s", ErrUnsupported, pyTypeName(fn))
}

// dims reads a tuple of sizes or strides, each in [0, torchMaxElement].
func dims(v any) ([]uint64, bool) {
	t, ok := v.(pyTuple)
	if !ok || len(t) > torchMaxDims {
		return nil, false
	}
	out := make([]uint64, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 || n > torchMaxElement {
			return nil, false
		}
		out[i] = uint64(n)
	}
	return out, true
}

func pyTypeName(v any) string {
	switch v.(type) {
	case pyTensor:
		return "a tensor"
	case pyTuple:
		return "a tuple"
	case pyStorage:
		return "a storage"
	case pyGlobal:
		return "a global"
	case string:
		return "a string"
	case int64:
		return "an int"
	case bool:
		return "a bool"
	}
	return "another value"
}
