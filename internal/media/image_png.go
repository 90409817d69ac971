package media

import "encoding/binary"

// maxDeflateRatio bounds how many bytes a deflate stream can inflate to per
// compressed byte: a stored run length of 258 coded in one bit at best,
// 258×8 / 2 ≈ 1032 (zlib's tech notes give 1032:1 as the limit).
const maxDeflateRatio = 1032

// probePNG reads the IHDR chunk and walks the chunk list (lengths only, no
// CRCs, no inflation) to the IEND chunk, so a truncated file is caught and
// the compressed data's total length is known: a header whose pixels could
// not fit in the IDAT bytes behind it, even at deflate's best ratio, lies.
func probePNG(data []byte) (Item, error) {
	const f = FormatPNG
	p := len(pngMagic)
	if len(data) < p+8+13+4 || string(data[p+4:p+8]) != "IHDR" || binary.BigEndian.Uint32(data[p:]) != 13 {
		return Item{}, corrupt(f, "no IHDR chunk")
	}
	ihdr := data[p+8 : p+8+13]
	w, h := binary.BigEndian.Uint32(ihdr[0:]), binary.BigEndian.Uint32(ihdr[4:])
	depth, color, interlace := ihdr[8], ihdr[9], ihdr[12]
	if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 {
		return Item{}, corrupt(f, "IHDR declares %dx%d pixels", w, h)
	}
	channels, ok := pngChannels(color, depth)
	if !ok {
		return Item{}, corrupt(f, "color type %d with bit depth %d", color, depth)
	}
	if interlace > 1 {
		return Item{}, corrupt(f, "interlace method %d", interlace)
	}
	var idat uint64
	sawIEND := false
	for p = len(pngMagic); p+8 <= len(data); {
		n := uint64(binary.BigEndian.Uint32(data[p:]))
		typ := string(data[p+4 : p+8])
		end := uint64(p) + 12 + n
		if end > uint64(len(data)) {
			return Item{}, corrupt(f, "chunk %q declares %d bytes, %d remain (truncated)", typ, n, len(data)-p-12)
		}
		switch typ {
		case "IDAT", "fdAT":
			idat += n
		}
		p = int(end)
		if typ == "IEND" {
			sawIEND = true
			break
		}
	}
	if !sawIEND {
		return Item{}, corrupt(f, "no IEND chunk (truncated)")
	}
	if idat == 0 {
		return Item{}, corrupt(f, "no image data")
	}
	// One filter byte per row plus the packed samples; an interlaced image
	// has more rows, so this is a lower bound either way.
	raw := uint64(h) * (1 + (uint64(w)*uint64(channels)*uint64(depth)+7)/8)
	if raw > idat*maxDeflateRatio+1<<16 {
		return Item{}, corrupt(f, "IHDR declares %dx%d pixels (%d bytes) but the %d bytes of image data can hold at most %d", w, h, raw, idat, idat*maxDeflateRatio)
	}
	return Item{Format: f, Width: int(w), Height: int(h)}, nil
}

// pngChannels returns the samples per pixel of a PNG color type, and
// whether the bit depth is allowed for it (PNG spec, table 11.1).
func pngChannels(color, depth byte) (int, bool) {
	switch color {
	case 0: // grayscale
		return 1, depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16
	case 2: // truecolor
		return 3, depth == 8 || depth == 16
	case 3: // indexed
		return 1, depth == 1 || depth == 2 || depth == 4 || depth == 8
	case 4: // grayscale + alpha
		return 2, depth == 8 || depth == 16
	case 6: // truecolor + alpha
		return 4, depth == 8 || depth == 16
	}
	return 0, false
}
