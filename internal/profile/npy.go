package profile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// npyArray is a decoded .npy array: float64 values in C (row-major) order.
type npyArray struct {
	shape []int
	data  []float64
}

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// maxNPYHeaderBytes bounds the header dict. numpy itself refuses to read
// headers over 10000 bytes unless told otherwise; the simple numeric arrays
// of a profile need about 100.
const maxNPYHeaderBytes = 64 << 10

// npyDtype is one element type the reader accepts: its width in bytes and
// how to turn one little-endian element into a float64.
type npyDtype struct {
	size    int
	convert func([]byte) float64
}

// npyDtypes are the accepted descr strings: little-endian float64, float32,
// int64 and int32, which is what numpy writes on every common machine for
// np.array(..., dtype=float/np.float32/int/np.int32).
var npyDtypes = map[string]npyDtype{
	"<f8": {8, func(p []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(p)) }},
	"<f4": {4, func(p []byte) float64 { return float64(math.Float32frombits(binary.LittleEndian.Uint32(p))) }},
	"<i8": {8, func(p []byte) float64 { return float64(int64(binary.LittleEndian.Uint64(p))) }},
	"<i4": {4, func(p []byte) float64 { return float64(int32(binary.LittleEndian.Uint32(p))) }},
}

// parseNPY decodes a .npy file (format versions 1.0, 2.0 and 3.0) holding a
// little-endian <f8, <f4, <i8 or <i4 array, converting values to float64.
// Fortran-order arrays are transposed to C order.
func parseNPY(b []byte) (*npyArray, error) {
	if len(b) < 10 || string(b[:6]) != npyMagic {
		return nil, errors.New("not a .npy file (bad magic)")
	}
	major, minor := b[6], b[7]
	var hlen, off int
	switch major {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, errors.New("truncated .npy preamble")
		}
		hlen, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d", major, minor)
	}
	if hlen > len(b)-off {
		return nil, fmt.Errorf("truncated .npy header (%d bytes declared, %d present)", hlen, len(b)-off)
	}
	if hlen > maxNPYHeaderBytes {
		return nil, fmt.Errorf(".npy header of %d bytes is larger than %d", hlen, maxNPYHeaderBytes)
	}
	descr, fortran, shape, err := parseNPYHeader(string(b[off : off+hlen]))
	if err != nil {
		return nil, fmt.Errorf("bad .npy header: %w", err)
	}
	dtype, ok := npyDtypes[descr]
	if !ok {
		return nil, unsupportedDescr(descr)
	}
	body := b[off+hlen:]
	count := 1
	for _, d := range shape {
		if d != 0 && count > len(body)/d {
			return nil, fmt.Errorf("shape %v needs more data than the %d bytes present", shape, len(body))
		}
		count *= d
	}
	if len(body) < count*dtype.size {
		return nil, fmt.Errorf("truncated data: shape %v of %s needs %d bytes, %d present", shape, descr, count*dtype.size, len(body))
	}
	data := make([]float64, count)
	for i := range data {
		data[i] = dtype.convert(body[i*dtype.size : (i+1)*dtype.size])
	}
	switch {
	case fortran && len(shape) == 2 && count > 0:
		// Column-major: element (i, j) is stored at j*rows + i. An empty
		// array needs no transposing (and one dimension of an empty array
		// may be enormous).
		rows, cols := shape[0], shape[1]
		rowMajor := make([]float64, count)
		for i := range rows {
			for j := range cols {
				rowMajor[i*cols+j] = data[j*rows+i]
			}
		}
		data = rowMajor
	case fortran && len(shape) > 2:
		return nil, fmt.Errorf("fortran_order arrays of %d dimensions are not supported", len(shape))
	}
	return &npyArray{shape: shape, data: data}, nil
}

// unsupportedDescr explains why a dtype is refused and, for the two cases a
// numpy user meets in practice, how to save the array instead.
func unsupportedDescr(descr string) error {
	const want = "want <f8, <f4, <i8 or <i4"
	switch {
	case strings.TrimLeft(descr, "<>|=") == "O":
		return fmt.Errorf("unsupported dtype descr %q: an object array holds pickled Python objects, which are never unpickled (%s; save numbers, e.g. np.asarray(a, dtype=np.float64))", descr, want)
	case strings.HasPrefix(descr, ">"):
		return fmt.Errorf("unsupported dtype descr %q: big-endian (%s; save a.astype(a.dtype.newbyteorder(\"<\")))", descr, want)
	default:
		return fmt.Errorf("unsupported dtype descr %q (%s)", descr, want)
	}
}

// parseNPYHeader extracts descr, fortran_order and shape from a .npy header,
// a Python dict literal such as
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
func parseNPYHeader(h string) (descr string, fortran bool, shape []int, err error) {
	lit := &pyLiteral{src: h}
	v, err := lit.value(0)
	if err != nil {
		return "", false, nil, err
	}
	lit.skipSpace()
	if lit.pos != len(lit.src) {
		return "", false, nil, fmt.Errorf("unexpected %q after the dict", lit.src[lit.pos:])
	}
	d, ok := v.(map[string]any)
	if !ok {
		return "", false, nil, errors.New("header is not a dict")
	}
	if descr, ok = d["descr"].(string); !ok {
		return "", false, nil, errors.New("'descr' missing or not a string")
	}
	if fortran, ok = d["fortran_order"].(bool); !ok {
		return "", false, nil, errors.New("'fortran_order' missing or not a bool")
	}
	dims, ok := d["shape"].([]any)
	if !ok {
		return "", false, nil, errors.New("'shape' missing or not a tuple")
	}
	shape = make([]int, len(dims))
	for i, x := range dims {
		n, ok := x.(int)
		if !ok || n < 0 {
			return "", false, nil, fmt.Errorf("'shape' element %d is not a non-negative integer", i)
		}
		shape[i] = n
	}
	return descr, fortran, shape, nil
}
