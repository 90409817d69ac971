package media

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// npyMagic opens a NumPy .npy file, the form of image_embeds vLLM reads
// without unpickling (ImageEmbeddingMediaIO checks for it first).
var npyMagic = []byte("\x93NUMPY")

// ProbeEmbeds reads the shape of an image_embeds payload: a torch.save
// archive (the form vLLM's ImageEmbeddingMediaIO loads with torch.load) or
// a NumPy .npy array. The shape is checked against the data that follows
// (a shape whose elements the data cannot hold lies: ErrCorrupt). A 2-D
// (tokens, hidden) tensor is one item of that many placeholder tokens; a
// 3-D (items, tokens, hidden) one reports the tokens of each item and
// Frames = items. Pre-1.6 torch.save files (a bare pickle stream) and
// anything but one dense floating-point tensor are ErrUnsupported.
func ProbeEmbeds(data []byte) (Item, error) {
	const what = "image_embeds"
	if bytes.HasPrefix(data, zipMagic) {
		return probeTorch(data)
	}
	a, err := readNpy(data, what)
	if err != nil {
		return Item{}, err
	}
	if len(a.shape) < 2 || len(a.shape) > 3 {
		return Item{}, fmt.Errorf("%w: %s of shape %s (want (tokens, hidden) or (items, tokens, hidden))", ErrCorrupt, what, a.shapeText)
	}
	it := Item{Kind: KindEmbeds, Size: len(data), EmbedTokens: int(a.shape[len(a.shape)-2]), EmbedHidden: int(a.shape[len(a.shape)-1])}
	if len(a.shape) == 3 {
		it.Frames = int(a.shape[0])
	}
	if it.EmbedTokens == 0 {
		return Item{}, fmt.Errorf("%w: %s with no rows", ErrCorrupt, what)
	}
	return it, nil
}

// npyArray is a .npy file's header and the bytes of its elements.
type npyArray struct {
	descr     string // the dtype string, e.g. "<f4"
	fortran   bool
	shape     []uint64
	shapeText string
	body      []byte // exactly the elements' bytes
}

// readNpy reads a .npy header and bounds its data.
func readNpy(data []byte, what string) (npyArray, error) {
	if len(data) >= 2 && data[0] == 0x80 && data[1] <= 5 {
		return npyArray{}, fmt.Errorf("%w: %s: a bare pickle (torch.save before torch 1.6, or _use_new_zipfile_serialization=False); save with a current torch", ErrUnsupported, what)
	}
	if len(data) < 10 || string(data[:6]) != string(npyMagic) {
		return npyArray{}, fmt.Errorf("%w: %s that is neither a torch.save archive nor a .npy array", ErrUnsupported, what)
	}
	var hlen, start int
	switch data[6] {
	case 1:
		hlen, start = int(binary.LittleEndian.Uint16(data[8:])), 10
	case 2, 3:
		if len(data) < 12 {
			return npyArray{}, fmt.Errorf("%w: %s: short header", ErrCorrupt, what)
		}
		hlen, start = int(binary.LittleEndian.Uint32(data[8:])), 12
	default:
		return npyArray{}, fmt.Errorf("%w: %s: .npy version %d", ErrUnsupported, what, data[6])
	}
	if hlen < 0 || start+hlen > len(data) || hlen > 1<<16 {
		return npyArray{}, fmt.Errorf("%w: %s: header of %d bytes past the data", ErrCorrupt, what, hlen)
	}
	header := string(data[start : start+hlen])
	descr, ok := npyField(header, "descr")
	if !ok {
		return npyArray{}, fmt.Errorf("%w: %s: no descr", ErrCorrupt, what)
	}
	descr = strings.Trim(descr, `'"`)
	size, ok := npyItemSize(descr)
	if !ok {
		return npyArray{}, fmt.Errorf("%w: %s: dtype %s", ErrUnsupported, what, descr)
	}
	shapeText, ok := npyField(header, "shape")
	if !ok || !strings.HasPrefix(shapeText, "(") {
		return npyArray{}, fmt.Errorf("%w: %s: no shape", ErrCorrupt, what)
	}
	a := npyArray{descr: descr, shapeText: shapeText}
	if f, ok := npyField(header, "fortran_order"); ok && strings.HasPrefix(f, "True") {
		a.fortran = true
	}
	for _, f := range strings.Split(strings.Trim(shapeText, "()"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 40)
		if err != nil || len(a.shape) >= torchMaxDims {
			return npyArray{}, fmt.Errorf("%w: %s: shape %s", ErrCorrupt, what, shapeText)
		}
		a.shape = append(a.shape, n)
	}
	elems := uint64(1)
	for _, n := range a.shape {
		if elems = elems * n; elems > 1<<40 {
			return npyArray{}, fmt.Errorf("%w: %s of shape %s", ErrTooLarge, what, shapeText)
		}
	}
	if have := uint64(len(data) - start - hlen); elems*size > have {
		return npyArray{}, fmt.Errorf("%w: %s: shape %s needs %d bytes, %d follow the header", ErrCorrupt, what, shapeText, elems*size, have)
	}
	a.body = data[start+hlen : uint64(start+hlen)+elems*size]
	return a, nil
}

// npyField returns the text of a key's value in the header's Python dict
// literal: a quoted string or a parenthesized tuple.
func npyField(header, key string) (string, bool) {
	i := strings.Index(header, "'"+key+"'")
	if i < 0 {
		return "", false
	}
	rest := strings.TrimSpace(header[i+len(key)+2:])
	rest, ok := strings.CutPrefix(rest, ":")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	var end int
	switch {
	case strings.HasPrefix(rest, "("):
		end = strings.IndexByte(rest, ')') + 1
	case strings.HasPrefix(rest, "'"):
		end = strings.IndexByte(rest[1:], '\'') + 2
	default:
		end = strings.IndexAny(rest, ",}")
	}
	if end <= 0 {
		return "", false
	}
	return rest[:end], true
}

// npyItemSize returns the bytes per element of a NumPy dtype string such
// as "<f4" or "<f2" (bfloat16 has no NumPy dtype and comes pickled).
func npyItemSize(d string) (uint64, bool) {
	if len(d) < 3 || !strings.ContainsRune("<>|=", rune(d[0])) || !strings.ContainsRune("fiuc", rune(d[1])) {
		return 0, false
	}
	n, err := strconv.ParseUint(d[2:], 10, 8)
	return n, err == nil && n > 0
}
