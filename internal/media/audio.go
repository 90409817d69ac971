package media

import (
	"encoding/binary"
	"time"
)

// samplesDuration converts a sample count at rate Hz into a Duration
// without overflow for any count a 64-bit header can carry at audio rates.
func samplesDuration(samples uint64, rate int) time.Duration {
	if rate <= 0 {
		return 0
	}
	sec := samples / uint64(rate)
	rem := samples % uint64(rate)
	if sec > uint64(1<<63-1)/uint64(time.Second) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(sec)*time.Second + time.Duration(rem*uint64(time.Second)/uint64(rate))
}

// probeWAV reads the fmt chunk and the data chunk's declared size. A data
// chunk that declares more bytes than the file holds lies — except the
// 0 and 0xFFFFFFFF placeholders a streaming writer leaves, where the bytes
// present are what a decoder reads.
func probeWAV(data []byte) (Item, error) {
	const f = FormatWAV
	var (
		rate, channels, align int
		haveFmt               bool
	)
	for p := 12; p+8 <= len(data); {
		typ := string(data[p : p+4])
		n := uint64(binary.LittleEndian.Uint32(data[p+4:]))
		body := uint64(p + 8)
		switch typ {
		case "fmt ":
			if n < 16 || body+16 > uint64(len(data)) {
				return Item{}, corrupt(f, "short fmt chunk")
			}
			c := data[body:]
			channels = int(binary.LittleEndian.Uint16(c[2:]))
			rate = int(binary.LittleEndian.Uint32(c[4:]))
			align = int(binary.LittleEndian.Uint16(c[12:]))
			if channels == 0 || rate == 0 || align == 0 {
				return Item{}, corrupt(f, "fmt declares %d channels at %d Hz, %d-byte frames", channels, rate, align)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return Item{}, corrupt(f, "data chunk before the fmt chunk")
			}
			have := uint64(len(data)) - body
			switch {
			case n == 0 || n == 0xFFFFFFFF:
				n = have
			case n > have:
				return Item{}, corrupt(f, "data chunk declares %d bytes, %d present (truncated)", n, have)
			}
			frames := n / uint64(align)
			return Item{Format: f, SampleRate: rate, Channels: channels, Duration: samplesDuration(frames, rate)}, nil
		}
		p = int(min(body+n+n&1, uint64(len(data))+8)) // chunks are word-aligned
		if p > len(data) {
			return Item{}, corrupt(f, "chunk %q declares %d bytes (truncated)", typ, n)
		}
	}
	return Item{}, corrupt(f, "no data chunk")
}

// probeFLAC reads STREAMINFO: sample rate, channels, total samples.
func probeFLAC(data []byte) (Item, error) {
	const f = FormatFLAC
	if len(data) < 8+34 || data[4]&0x7F != 0 {
		return Item{}, corrupt(f, "no STREAMINFO block")
	}
	if n := int(data[5])<<16 | int(data[6])<<8 | int(data[7]); n < 34 {
		return Item{}, corrupt(f, "STREAMINFO of %d bytes", n)
	}
	si := data[8:]
	b := binary.BigEndian.Uint64(si[10:])
	rate := int(b >> 44)
	channels := int(b>>41&7) + 1
	total := b & (1<<36 - 1)
	if rate == 0 {
		return Item{}, corrupt(f, "sample rate 0")
	}
	// A FLAC frame holds at most 65535 samples in a handful of bytes, so
	// the declared total needs at least one frame header per 65535 samples.
	if frames := total / 65535; frames*6 > uint64(len(data)) {
		return Item{}, corrupt(f, "STREAMINFO declares %d samples but the stream has %d bytes", total, len(data))
	}
	return Item{Format: f, SampleRate: rate, Channels: channels, Duration: samplesDuration(total, rate)}, nil
}

// probeOGG reads the first packet (a Vorbis or Opus identification header)
// for the rate and the last page's granule position for the length.
func probeOGG(data []byte) (Item, error) {
	const f = FormatOGG
	first, _, err := oggPage(data, 0)
	if err != nil {
		return Item{}, err
	}
	var (
		rate, channels int
		preSkip        uint64
		opus           bool
	)
	switch {
	case len(first) >= 16 && string(first[:7]) == "\x01vorbis":
		channels = int(first[11])
		rate = int(binary.LittleEndian.Uint32(first[12:]))
	case len(first) >= 19 && string(first[:8]) == "OpusHead":
		channels = int(first[9])
		preSkip = uint64(binary.LittleEndian.Uint16(first[10:]))
		rate, opus = 48000, true // Opus granules count 48 kHz samples
	default:
		return Item{}, corrupt(f, "neither a Vorbis nor an Opus stream")
	}
	if rate == 0 || channels == 0 {
		return Item{}, corrupt(f, "%d channels at %d Hz", channels, rate)
	}
	// Walk the pages to the last one: page headers only, which checks that
	// no page runs past the data.
	var granule uint64
	for p := 0; p < len(data); {
		_, next, err := oggPage(data, p)
		if err != nil {
			return Item{}, err
		}
		if g := binary.LittleEndian.Uint64(data[p+6:]); g != ^uint64(0) {
			granule = g
		}
		p = next
	}
	if opus {
		granule -= min(granule, preSkip)
	}
	it := Item{Format: f, SampleRate: rate, Channels: channels, Duration: samplesDuration(granule, rate)}
	if opus {
		it.SampleRate = int(binary.LittleEndian.Uint32(first[12:])) // the input rate, informational
		if it.SampleRate == 0 {
			it.SampleRate = 48000
		}
	}
	return it, nil
}

// oggPage returns the first segment run (packet start) of the page at p
// and the offset of the next page.
func oggPage(data []byte, p int) (body []byte, next int, err error) {
	if p+27 > len(data) || string(data[p:p+4]) != "OggS" {
		return nil, 0, corrupt(FormatOGG, "no page at byte %d (truncated)", p)
	}
	nseg := int(data[p+26])
	if p+27+nseg > len(data) {
		return nil, 0, corrupt(FormatOGG, "short page header at byte %d", p)
	}
	size := 0
	for _, s := range data[p+27 : p+27+nseg] {
		size += int(s)
	}
	start := p + 27 + nseg
	if start+size > len(data) {
		return nil, 0, corrupt(FormatOGG, "page at byte %d declares %d bytes, %d remain (truncated)", p, size, len(data)-start)
	}
	return data[start : start+size], start + size, nil
}
