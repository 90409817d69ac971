package media

import "encoding/binary"

// probeWebP checks the RIFF container's declared size against the data and
// reads the size from the first chunk: VP8X's canvas, VP8L's header or the
// VP8 key frame header.
func probeWebP(data []byte) (Item, error) {
	const f = FormatWebP
	riff := uint64(binary.LittleEndian.Uint32(data[4:]))
	if riff+8 > uint64(len(data)) {
		return Item{}, corrupt(f, "RIFF header declares %d bytes, %d present (truncated)", riff+8, len(data))
	}
	if len(data) < 20 {
		return Item{}, corrupt(f, "no chunk")
	}
	typ := string(data[12:16])
	n := uint64(binary.LittleEndian.Uint32(data[16:]))
	if 20+n > riff+8 {
		return Item{}, corrupt(f, "chunk %q declares %d bytes, %d remain (truncated)", typ, n, riff+8-20)
	}
	c := data[20 : 20+n]
	var w, h int
	switch typ {
	case "VP8X":
		if len(c) < 10 {
			return Item{}, corrupt(f, "short VP8X chunk")
		}
		w = 1 + int(uint32(c[4])|uint32(c[5])<<8|uint32(c[6])<<16)
		h = 1 + int(uint32(c[7])|uint32(c[8])<<8|uint32(c[9])<<16)
	case "VP8L":
		if len(c) < 5 || c[0] != 0x2F {
			return Item{}, corrupt(f, "bad VP8L header")
		}
		b := binary.LittleEndian.Uint32(c[1:])
		w = 1 + int(b&0x3FFF)
		h = 1 + int(b>>14&0x3FFF)
	case "VP8 ":
		if len(c) < 10 || c[3] != 0x9D || c[4] != 0x01 || c[5] != 0x2A {
			return Item{}, corrupt(f, "bad VP8 key frame header")
		}
		if c[0]&1 != 0 {
			return Item{}, corrupt(f, "VP8 chunk starts with an inter frame")
		}
		if part := uint64(c[0])>>5 | uint64(c[1])<<3 | uint64(c[2])<<11; 10+part > n {
			return Item{}, corrupt(f, "VP8 first partition declares %d bytes, %d remain", part, n-10)
		}
		w = int(binary.LittleEndian.Uint16(c[6:]) & 0x3FFF)
		h = int(binary.LittleEndian.Uint16(c[8:]) & 0x3FFF)
	default:
		return Item{}, corrupt(f, "first chunk %q", typ)
	}
	return Item{Format: f, Width: w, Height: h}, nil
}
