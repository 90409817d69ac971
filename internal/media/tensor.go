package media

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Tensor is a dense tensor read from an embeddings payload (a torch.save
// archive or a .npy array) without executing anything: what vLLM's
// ImageEmbeddingMediaIO gets from torch.load (or torch.from_numpy) and its
// multimodal hasher serializes. Its elements stay in the payload; C-order
// bytes are gathered only when the view is not contiguous.
type Tensor struct {
	// Dtype is torch's name of the element type: "float32", "float16",
	// "bfloat16", "float64", "int64" or "int32".
	Dtype string
	// Shape is the size of each dimension.
	Shape []int
	view  torchTensor
}

// ReadTensor reads the one tensor of a torch.save archive (the checks of
// ProbeEmbeds: a restricted unpickler, a view inside its storage) or of a
// little-endian .npy array of float16/32/64 or int64, in C or Fortran
// order. A .npy of another byte order is refused, as torch.from_numpy
// refuses it; a 0-D tensor is refused (vLLM hashes its Python scalar).
func ReadTensor(data []byte) (Tensor, error) {
	const what = "tensor"
	var t torchTensor
	if bytes.HasPrefix(data, zipMagic) {
		var err error
		if t, err = readTorch(data, what); err != nil {
			return Tensor{}, err
		}
	} else {
		a, err := readNpy(data, what)
		if err != nil {
			return Tensor{}, err
		}
		if t, err = npyView(a); err != nil {
			return Tensor{}, err
		}
	}
	if len(t.shape) == 0 {
		return Tensor{}, fmt.Errorf("%w: %s: a 0-D tensor", ErrUnsupported, what)
	}
	shape := make([]int, len(t.shape))
	for i, n := range t.shape {
		shape[i] = int(n)
	}
	return Tensor{Dtype: t.dtype, Shape: shape, view: t}, nil
}

// npyDtypes maps the .npy dtypes ReadTensor takes to torch's names.
var npyDtypes = map[string]string{"<f2": "float16", "<f4": "float32", "<f8": "float64", "<i8": "int64", "<i4": "int32"}

// npyView describes a .npy array's body as a view: C order, or Fortran
// order (strides growing from the first dimension), as np.load returns it.
func npyView(a npyArray) (torchTensor, error) {
	dtype, ok := npyDtypes[a.descr]
	if !ok {
		return torchTensor{}, fmt.Errorf("%w: tensor: .npy dtype %s (little-endian float16/32/64 or int64 are read; torch.from_numpy refuses another byte order)", ErrUnsupported, a.descr)
	}
	size := uint64(dtype2size(a.descr))
	stride := make([]uint64, len(a.shape))
	acc := uint64(1)
	for k := range a.shape {
		i := len(a.shape) - 1 - k // C order: the last dimension is contiguous
		if a.fortran {
			i = k
		}
		stride[i] = acc
		acc *= a.shape[i]
	}
	return torchTensor{dtype: dtype, np: a.descr, size: size, shape: a.shape, stride: stride, storage: a.body}, nil
}

func dtype2size(descr string) int { return int(descr[2] - '0') }

// Ints returns an integer (int64 or int32) tensor's elements in C order.
func (t Tensor) Ints() ([]int64, error) {
	b := t.view.cBytes()
	switch t.Dtype {
	case "int64":
		out := make([]int64, len(b)/8)
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
		return out, nil
	case "int32":
		out := make([]int64, len(b)/4)
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: a %s tensor, not an integer one", ErrUnsupported, t.Dtype)
}

// Index returns the i-th slice along the first dimension (tensor[i]), a
// view of one dimension fewer.
func (t Tensor) Index(i int) (Tensor, error) {
	if len(t.Shape) < 2 || i < 0 || i >= t.Shape[0] {
		return Tensor{}, fmt.Errorf("%w: index %d of a tensor of shape %v", ErrUnsupported, i, t.Shape)
	}
	v := t.view
	v.offset += uint64(i) * v.stride[0]
	v.shape, v.stride = v.shape[1:], v.stride[1:]
	return Tensor{Dtype: t.Dtype, Shape: t.Shape[1:], view: v}, nil
}

// contiguous reports whether the view's elements lie in C order from its
// offset on (strides of size-1 dimensions do not matter, as for torch's
// is_contiguous and NumPy's C_CONTIGUOUS flag).
func (t torchTensor) contiguous() bool {
	want := uint64(1)
	for i := len(t.shape) - 1; i >= 0; i-- {
		if t.shape[i] != 1 && t.stride[i] != want {
			return false
		}
		want *= t.shape[i]
	}
	return true
}

// cBytes returns the view's elements in C order: tensor.numpy().tobytes().
// A contiguous view is a slice of the payload; any other is gathered (at
// most the storage's bytes, since readTorch refuses views that repeat
// elements).
func (t torchTensor) cBytes() []byte {
	n := uint64(1)
	for _, d := range t.shape {
		n *= d
	}
	if n == 0 {
		return nil
	}
	if t.contiguous() {
		return t.storage[t.offset*t.size : (t.offset+n)*t.size]
	}
	out := make([]byte, 0, n*t.size)
	last := len(t.shape) - 1
	idx := make([]uint64, last) // the index over all dimensions but the last
	for {
		pos := t.offset
		for i, x := range idx {
			pos += x * t.stride[i]
		}
		if t.stride[last] == 1 {
			out = append(out, t.storage[pos*t.size:(pos+t.shape[last])*t.size]...)
		} else {
			for j := uint64(0); j < t.shape[last]; j++ {
				p := pos + j*t.stride[last]
				out = append(out, t.storage[p*t.size:(p+1)*t.size]...)
			}
		}
		i := last - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < t.shape[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
	}
}
