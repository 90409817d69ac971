package media

import "encoding/binary"

// probeBMP reads the DIB header's size. An uncompressed bitmap whose rows
// would run past the data lies.
func probeBMP(data []byte) (Item, error) {
	const f = FormatBMP
	if len(data) < 26 {
		return Item{}, corrupt(f, "short header")
	}
	off := uint64(binary.LittleEndian.Uint32(data[10:]))
	dib := binary.LittleEndian.Uint32(data[14:])
	var w, h, bpp, compression uint64
	switch {
	case dib == 12: // OS/2 BITMAPCOREHEADER
		w, h = uint64(binary.LittleEndian.Uint16(data[18:])), uint64(binary.LittleEndian.Uint16(data[20:]))
		bpp = uint64(binary.LittleEndian.Uint16(data[24:]))
	case dib >= 40 && len(data) >= 34:
		sw, sh := int32(binary.LittleEndian.Uint32(data[18:])), int32(binary.LittleEndian.Uint32(data[22:]))
		if sh < 0 { // a top-down bitmap
			sh = -sh
		}
		if sw <= 0 || sh <= 0 {
			return Item{}, corrupt(f, "header declares %dx%d pixels", sw, sh)
		}
		w, h = uint64(sw), uint64(sh)
		bpp = uint64(binary.LittleEndian.Uint16(data[28:]))
		compression = uint64(binary.LittleEndian.Uint32(data[30:]))
	default:
		return Item{}, corrupt(f, "DIB header of %d bytes", dib)
	}
	if compression == 0 || compression == 3 { // BI_RGB, BI_BITFIELDS: raw rows
		rows := (bpp*w + 31) / 32 * 4 * h
		if off+rows > uint64(len(data)) {
			return Item{}, corrupt(f, "header declares %dx%d pixels at %d bits (%d bytes) but %d bytes follow the header", w, h, bpp, rows, max(0, len(data)-int(min(off, uint64(len(data))))))
		}
	}
	return Item{Format: f, Width: int(min(w, 1<<31-1)), Height: int(min(h, 1<<31-1))}, nil
}

// probeTIFF reads the first image file directory's ImageWidth and
// ImageLength tags, checking every offset against the data.
func probeTIFF(data []byte) (Item, error) {
	const f = FormatTIFF
	var bo binary.ByteOrder = binary.LittleEndian
	if data[0] == 'M' {
		bo = binary.BigEndian
	}
	ifd := uint64(bo.Uint32(data[4:]))
	if ifd+2 > uint64(len(data)) {
		return Item{}, corrupt(f, "directory at %d past the data", ifd)
	}
	n := uint64(bo.Uint16(data[ifd:]))
	if ifd+2+12*n > uint64(len(data)) {
		return Item{}, corrupt(f, "directory of %d entries past the data", n)
	}
	var w, h uint64
	for i := range n {
		e := data[ifd+2+12*i:]
		tag, typ := bo.Uint16(e), bo.Uint16(e[2:])
		var v uint64
		switch typ {
		case 3: // SHORT
			v = uint64(bo.Uint16(e[8:]))
		case 4: // LONG
			v = uint64(bo.Uint32(e[8:]))
		default:
			continue
		}
		switch tag {
		case 256:
			w = v
		case 257:
			h = v
		}
	}
	if w == 0 || h == 0 {
		return Item{}, corrupt(f, "no image size in the first directory")
	}
	return Item{Format: f, Width: int(min(w, 1<<31-1)), Height: int(min(h, 1<<31-1))}, nil
}
