package media

import (
	"encoding/binary"
	"time"
)

// mp4Box is one ISO BMFF box: its type and its payload's extent.
type mp4Box struct {
	typ        string
	start, end int // payload
}

// mp4Boxes lists the boxes in data[p:end], checking each size against the
// data; a box that runs past it is a header that lies (or a truncated
// file) — except an mdat at the top level, whose payload the probe never
// needs.
func mp4Boxes(data []byte, p, end int, top bool) ([]mp4Box, error) {
	var out []mp4Box
	for p+8 <= end {
		size := uint64(binary.BigEndian.Uint32(data[p:]))
		typ := string(data[p+4 : p+8])
		hdr := 8
		switch size {
		case 1:
			if p+16 > end {
				return nil, corrupt(FormatMP4, "short box header")
			}
			size, hdr = binary.BigEndian.Uint64(data[p+8:]), 16
		case 0:
			size = uint64(end - p)
		}
		if size < uint64(hdr) {
			return nil, corrupt(FormatMP4, "box %q of %d bytes", typ, size)
		}
		if uint64(p)+size > uint64(end) {
			if top && typ == "mdat" {
				size = uint64(end - p)
			} else {
				return nil, corrupt(FormatMP4, "box %q declares %d bytes, %d remain (truncated)", typ, size, end-p)
			}
		}
		out = append(out, mp4Box{typ, p + hdr, p + int(size)})
		p += int(size)
		if len(out) > 1<<16 {
			return nil, corrupt(FormatMP4, "too many boxes")
		}
	}
	return out, nil
}

func mp4Find(data []byte, b mp4Box, path ...string) (mp4Box, bool) {
	for _, name := range path {
		kids, err := mp4Boxes(data, b.start, b.end, false)
		if err != nil {
			return mp4Box{}, false
		}
		found := false
		for _, k := range kids {
			if k.typ == name {
				b, found = k, true
				break
			}
		}
		if !found {
			return mp4Box{}, false
		}
	}
	return b, true
}

// probeMP4 reads the first video track of an MP4/QuickTime file: its frame
// size from the visual sample entry, its duration from the media header and
// its frame count from the sample size table. It never touches mdat.
func probeMP4(data []byte) (Item, error) {
	const f = FormatMP4
	top, err := mp4Boxes(data, 0, len(data), true)
	if err != nil {
		return Item{}, err
	}
	var moov mp4Box
	for _, b := range top {
		if b.typ == "moov" {
			moov = b
		}
	}
	if moov.typ == "" {
		return Item{}, corrupt(f, "no moov box")
	}
	traks, err := mp4Boxes(data, moov.start, moov.end, false)
	if err != nil {
		return Item{}, err
	}
	for _, t := range traks {
		if t.typ != "trak" {
			continue
		}
		if mp4Handler(data, t) != "vide" {
			continue
		}
		scale, dur, err := mp4MediaHeader(data, t, "video")
		if err != nil {
			return Item{}, err
		}
		stsd, ok := mp4Find(data, t, "mdia", "minf", "stbl", "stsd")
		// stsd: version/flags, entry count, then the first sample entry:
		// size, format, 6 reserved, data ref index, 16 predefined, w, h.
		if !ok || stsd.end-stsd.start < 8+8+8+16+4 {
			return Item{}, corrupt(f, "video track without a sample description")
		}
		e := stsd.start + 8 + 8
		w := int(binary.BigEndian.Uint16(data[e+24:]))
		h := int(binary.BigEndian.Uint16(data[e+26:]))
		stsz, ok := mp4Find(data, t, "mdia", "minf", "stbl", "stsz")
		if !ok || stsz.end-stsz.start < 12 {
			return Item{}, corrupt(f, "video track without a sample size table")
		}
		frames := uint64(binary.BigEndian.Uint32(data[stsz.start+8:]))
		if binary.BigEndian.Uint32(data[stsz.start+4:]) == 0 && uint64(stsz.end-stsz.start-12) < 4*frames {
			return Item{}, corrupt(f, "sample size table declares %d samples in %d bytes", frames, stsz.end-stsz.start-12)
		}
		it := Item{Format: f, Width: w, Height: h, Frames: int(min(frames, 1<<31-1))}
		it.Duration = samplesDuration(dur, int(scale))
		if it.Duration > 0 {
			it.FPS = float64(frames) / it.Duration.Seconds()
		}
		if it.Duration > 24*time.Hour {
			return Item{}, corrupt(f, "duration %v", it.Duration)
		}
		if it.AudioDuration, it.AudioSampleRate, err = mp4SoundTrack(data, traks); err != nil {
			return Item{}, err
		}
		return it, nil
	}
	return Item{}, corrupt(f, "no video track")
}

// mp4Handler is a track's handler type ("vide", "soun"), or "" when its
// hdlr box is missing or short.
func mp4Handler(data []byte, trak mp4Box) string {
	hdlr, ok := mp4Find(data, trak, "mdia", "hdlr")
	if !ok || hdlr.end-hdlr.start < 12 {
		return ""
	}
	return string(data[hdlr.start+8 : hdlr.start+12])
}

// mp4MediaHeader reads a track's mdhd: its timescale (ticks a second) and
// its duration in those ticks. A missing, short or zero-timescale header
// is corrupt.
func mp4MediaHeader(data []byte, trak mp4Box, what string) (scale, dur uint64, err error) {
	const f = FormatMP4
	mdhd, ok := mp4Find(data, trak, "mdia", "mdhd")
	if !ok || mdhd.end-mdhd.start < 24 {
		return 0, 0, corrupt(f, "%s track without a media header", what)
	}
	if data[mdhd.start] == 1 {
		if mdhd.end-mdhd.start < 36 {
			return 0, 0, corrupt(f, "short %s media header", what)
		}
		scale = uint64(binary.BigEndian.Uint32(data[mdhd.start+20:]))
		dur = binary.BigEndian.Uint64(data[mdhd.start+24:])
	} else {
		scale = uint64(binary.BigEndian.Uint32(data[mdhd.start+12:]))
		dur = uint64(binary.BigEndian.Uint32(data[mdhd.start+16:]))
	}
	if scale == 0 {
		return 0, 0, corrupt(f, "%s media timescale 0", what)
	}
	return scale, dur, nil
}

// mp4SoundTrack reads the first sound track's duration from its media
// header, and its timescale, which for audio is the sample rate by
// convention (ISO/IEC 14496-12). No sound track is (0, 0, nil); one whose
// header lies is corrupt, as the video track's is.
func mp4SoundTrack(data []byte, traks []mp4Box) (time.Duration, int, error) {
	for _, t := range traks {
		if t.typ != "trak" || mp4Handler(data, t) != "soun" {
			continue
		}
		scale, dur, err := mp4MediaHeader(data, t, "sound")
		if err != nil {
			return 0, 0, err
		}
		d := samplesDuration(dur, int(min(scale, 1<<31-1)))
		if d < 0 || d > 24*time.Hour {
			return 0, 0, corrupt(FormatMP4, "sound track duration %v", d)
		}
		return d, int(min(scale, 1<<31-1)), nil
	}
	return 0, 0, nil
}
