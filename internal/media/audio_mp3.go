package media

import "encoding/binary"

// mp3Header is one MPEG audio frame header.
type mp3Header struct {
	rate, channels, samples, length int
	sideInfo                        int // bytes of Layer III side information
}

var (
	mp3Rates = [4][3]int{ // by version bits (0: 2.5, 2: 2, 3: 1), index
		{11025, 12000, 8000}, {}, {22050, 24000, 16000}, {44100, 48000, 32000},
	}
	// kbit/s by [MPEG-1?][layer 1..3][index]
	mp3Bitrates = [2][3][16]int{
		{ // MPEG-2 and 2.5
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
			{0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
		},
		{ // MPEG-1
			{0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448},
			{0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384},
			{0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
		},
	}
)

// parseMP3Header decodes the four bytes at b (ISO 11172-3 / 13818-3).
func parseMP3Header(b []byte) (mp3Header, bool) {
	if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
		return mp3Header{}, false
	}
	ver := int(b[1] >> 3 & 3)
	layer := 4 - int(b[1]>>1&3) // 1, 2, 3
	bri := int(b[2] >> 4)
	sri := int(b[2] >> 2 & 3)
	pad := int(b[2] >> 1 & 1)
	if ver == 1 || layer == 4 || bri == 0 || bri == 15 || sri == 3 {
		return mp3Header{}, false
	}
	mpeg1 := 0
	if ver == 3 {
		mpeg1 = 1
	}
	rate := mp3Rates[ver][sri]
	kbps := mp3Bitrates[mpeg1][layer-1][bri]
	h := mp3Header{rate: rate, channels: 2}
	if b[3]>>6 == 3 {
		h.channels = 1
	}
	switch layer {
	case 1:
		h.samples = 384
		h.length = (12*kbps*1000/rate + pad) * 4
	case 2:
		h.samples = 1152
		h.length = 144*kbps*1000/rate + pad
	case 3:
		h.samples = 1152
		coef := 144
		if mpeg1 == 0 {
			h.samples, coef = 576, 72
		}
		h.length = coef*kbps*1000/rate + pad
		switch {
		case mpeg1 == 1 && h.channels == 2:
			h.sideInfo = 32
		case mpeg1 == 1 || h.channels == 2:
			h.sideInfo = 17
		default:
			h.sideInfo = 9
		}
	}
	return h, h.length >= 4
}

// probeMP3 skips an ID3v2 tag, reads the first frame header, and takes the
// frame count from a Xing/Info or VBRI header when the encoder wrote one;
// otherwise it walks the frame headers (one jump per frame, no decoding).
// The duration is frames × samples per frame, less the encoder delay and
// padding of a LAME tag, which gapless decoders (mpg123, and so
// libsndfile and librosa) trim.
func probeMP3(data []byte) (Item, error) {
	const f = FormatMP3
	p := 0
	if len(data) >= 10 && string(data[:3]) == "ID3" {
		size := int(data[6]&0x7F)<<21 | int(data[7]&0x7F)<<14 | int(data[8]&0x7F)<<7 | int(data[9]&0x7F)
		p = 10 + size
		if data[5]&0x10 != 0 { // footer
			p += 10
		}
	}
	// Some files pad between the tag and the first frame.
	for p < len(data) && data[p] == 0 {
		p++
	}
	first, ok := parseMP3Header(data[min(p, len(data)):])
	if !ok {
		return Item{}, corrupt(f, "no frame header at byte %d", p)
	}
	it := Item{Format: f, SampleRate: first.rate, Channels: first.channels}
	if xing := p + 4 + first.sideInfo; first.sideInfo > 0 && xing+12 <= len(data) {
		tag := string(data[xing : xing+4])
		if (tag == "Xing" || tag == "Info") && binary.BigEndian.Uint32(data[xing+4:])&1 != 0 {
			frames := uint64(binary.BigEndian.Uint32(data[xing+8:]))
			if frames > uint64(len(data)) { // every frame has at least one byte
				return Item{}, corrupt(f, "%s header declares %d frames in %d bytes", tag, frames, len(data))
			}
			samples := frames * uint64(first.samples)
			samples -= min(samples, lameGap(data, xing, binary.BigEndian.Uint32(data[xing+4:])))
			it.Duration = samplesDuration(samples, first.rate)
			return it, nil
		}
	}
	if v := p + 4 + 32; v+18 <= len(data) && string(data[v:v+4]) == "VBRI" {
		frames := uint64(binary.BigEndian.Uint32(data[v+14:]))
		if frames > uint64(len(data)) {
			return Item{}, corrupt(f, "VBRI header declares %d frames in %d bytes", frames, len(data))
		}
		it.Duration = samplesDuration(frames*uint64(first.samples), first.rate)
		return it, nil
	}
	var samples uint64
	for p < len(data) {
		h, ok := parseMP3Header(data[p:])
		if !ok {
			break // an ID3v1 tag or trailing bytes end the stream
		}
		if p+h.length > len(data) {
			break // a last frame cut short: decoders drop it
		}
		samples += uint64(h.samples)
		p += h.length
	}
	if samples == 0 {
		return Item{}, corrupt(f, "no complete frame")
	}
	it.Duration = samplesDuration(samples, first.rate)
	return it, nil
}

// lameGap returns the encoder delay plus padding of the LAME extension that
// follows a Xing/Info header at xing with the given flags, or 0.
func lameGap(data []byte, xing int, flags uint32) uint64 {
	p := xing + 8
	for bit, n := range []int{4, 4, 100, 4} { // frames, bytes, TOC, quality
		if flags&(1<<bit) != 0 {
			p += n
		}
	}
	if p+24 > len(data) || string(data[p:p+4]) != "LAME" {
		return 0
	}
	g := data[p+21:]
	delay := uint64(g[0])<<4 | uint64(g[1])>>4
	padding := uint64(g[1]&0x0F)<<8 | uint64(g[2])
	return delay + padding
}
