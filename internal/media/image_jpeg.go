package media

import "encoding/binary"

// probeJPEG walks the marker segments to the frame header (SOFn) for the
// size, then to the first scan (SOS). The entropy-coded data after it must
// be long enough for the blocks the frame declares: every 8×8 block of the
// first component costs at least one bit of its first DC scan, so fewer
// than blocks/8 bytes means a header that lies.
func probeJPEG(data []byte) (Item, error) {
	const f = FormatJPEG
	var (
		w, h  int
		found bool
	)
	p := 2
	for p+4 <= len(data) {
		if data[p] != 0xFF {
			return Item{}, corrupt(f, "no marker at byte %d", p)
		}
		m := data[p+1]
		switch {
		case m == 0xFF: // fill byte
			p++
			continue
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // standalone
			p += 2
			continue
		case m == 0xD9:
			return Item{}, corrupt(f, "end of image before any scan")
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if n < 2 || p+2+n > len(data) {
			return Item{}, corrupt(f, "segment %#02x declares %d bytes, %d remain (truncated)", m, n, len(data)-p-2)
		}
		seg := data[p+4 : p+2+n]
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			if len(seg) < 6 {
				return Item{}, corrupt(f, "short frame header")
			}
			h, w = int(binary.BigEndian.Uint16(seg[1:])), int(binary.BigEndian.Uint16(seg[3:]))
			if w == 0 || h == 0 {
				// A height of 0 defers to a DNL marker, which PIL's
				// libjpeg rejects too.
				return Item{}, corrupt(f, "frame header declares %dx%d pixels", w, h)
			}
			found = true
		}
		p += 2 + n
		if m == 0xDA { // start of scan: entropy-coded data follows
			if !found {
				return Item{}, corrupt(f, "scan before the frame header")
			}
			blocks := ((w + 7) / 8) * ((h + 7) / 8)
			if have := len(data) - p; have < blocks/8 {
				return Item{}, corrupt(f, "frame declares %dx%d pixels (%d blocks) but only %d bytes of scan data follow", w, h, blocks, have)
			}
			return Item{Format: f, Width: w, Height: h}, nil
		}
	}
	return Item{}, corrupt(f, "no scan (truncated)")
}
