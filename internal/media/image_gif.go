package media

import "encoding/binary"

// maxLZWPixelsPerByte bounds GIF's LZW: a code is at least 3 bits and emits
// at most 4096 pixels (the longest string a 12-bit table holds).
const maxLZWPixelsPerByte = 8 * 4096 / 3

// probeGIF reads the logical screen size (the size PIL reports) and walks
// the blocks to the trailer, counting frames and checking each frame's
// rectangle and compressed length against the pixels it declares.
func probeGIF(data []byte) (Item, error) {
	const f = FormatGIF
	if len(data) < 13 {
		return Item{}, corrupt(f, "short header")
	}
	w, h := int(binary.LittleEndian.Uint16(data[6:])), int(binary.LittleEndian.Uint16(data[8:]))
	p := 13
	if data[10]&0x80 != 0 {
		p += 3 << (data[10]&7 + 1)
	}
	frames := 0
	for {
		if p >= len(data) {
			return Item{}, corrupt(f, "no trailer (truncated)")
		}
		switch data[p] {
		case 0x3B: // trailer
			if frames == 0 {
				return Item{}, corrupt(f, "no image")
			}
			return Item{Format: f, Width: w, Height: h, Frames: frames}, nil
		case 0x21: // extension: label, then sub-blocks
			n, err := gifSubBlocks(data, p+2)
			if err != nil {
				return Item{}, err
			}
			p = n
		case 0x2C: // image descriptor
			if p+10 > len(data) {
				return Item{}, corrupt(f, "short image descriptor")
			}
			fw, fh := int(binary.LittleEndian.Uint16(data[p+5:])), int(binary.LittleEndian.Uint16(data[p+7:]))
			flags := data[p+9]
			p += 10
			if flags&0x80 != 0 {
				p += 3 << (flags&7 + 1)
			}
			start := p + 1 // after the LZW minimum code size
			end, err := gifSubBlocks(data, start)
			if err != nil {
				return Item{}, err
			}
			if px := uint64(fw) * uint64(fh); px > uint64(end-start)*maxLZWPixelsPerByte {
				return Item{}, corrupt(f, "frame declares %dx%d pixels but has %d bytes of data", fw, fh, end-start)
			}
			frames++
			p = end
		default:
			return Item{}, corrupt(f, "unknown block %#02x", data[p])
		}
	}
}

// gifSubBlocks skips a chain of sub-blocks starting at p and returns the
// offset after its terminator.
func gifSubBlocks(data []byte, p int) (int, error) {
	for {
		if p >= len(data) {
			return 0, corrupt(FormatGIF, "sub-blocks run past the data (truncated)")
		}
		n := int(data[p])
		p++
		if n == 0 {
			return p, nil
		}
		p += n
	}
}
