package media

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// box builds an ISO BMFF box.
func box(typ string, payload ...[]byte) []byte {
	n := 8
	for _, p := range payload {
		n += len(p)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(n))
	b = append(b, typ...)
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

func u32s(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

// mp4File is a minimal MP4 with one video track of w×h frames, n samples
// and the given duration in a 1/timescale clock, moov after mdat as many
// encoders write it.
func mp4File(w, h int, n, timescale, duration uint32) []byte {
	hdlr := box("hdlr", u32s(0, 0), []byte("vide"), make([]byte, 13))
	mdhd := box("mdhd", u32s(0, 0, 0, timescale, duration, 0))
	entry := make([]byte, 78)
	binary.BigEndian.PutUint16(entry[24:], uint16(w))
	binary.BigEndian.PutUint16(entry[26:], uint16(h))
	stsd := box("stsd", u32s(0, 1), box("avc1", entry))
	sizes := make([]byte, 4*n)
	stsz := box("stsz", u32s(0, 0, n), sizes)
	stbl := box("stbl", stsd, stsz)
	trak := box("trak", box("mdia", mdhd, hdlr, box("minf", stbl)))
	soun := box("trak", box("mdia", box("hdlr", u32s(0, 0), []byte("soun"), make([]byte, 13))))
	return append(append(box("ftyp", []byte("isom"), u32s(512)), box("mdat", make([]byte, 1000))...), box("moov", soun, trak)...)
}

func TestProbeMP4(t *testing.T) {
	it, err := Probe(mp4File(1280, 720, 300, 30000, 300300))
	if err != nil {
		t.Fatal(err)
	}
	if it.Kind != KindVideo || it.Width != 1280 || it.Height != 720 || it.Frames != 300 || it.Duration != 10010*time.Millisecond {
		t.Fatalf("got %+v", it)
	}
	if it.FPS < 29.97 || it.FPS > 29.98 {
		t.Fatalf("fps %v", it.FPS)
	}
	// A sample table that declares more samples than it holds lies.
	f := mp4File(64, 64, 10, 600, 600)
	i := len(f) - 4*10 - 4
	binary.BigEndian.PutUint32(f[i:], 1_000_000)
	if _, err := Probe(f); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("lying stsz: %v", err)
	}
	// So does a moov box that runs past the end.
	g := mp4File(64, 64, 10, 600, 600)
	if _, err := Probe(g[:len(g)-5]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated moov: %v", err)
	}
}
