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
	return mp4WithSound(w, h, n, timescale, duration, box("mdhd", u32s(0, 0, 0, 48000, uint32(uint64(duration)*48000/uint64(timescale)), 0)))
}

// mp4WithSound is mp4File with a sound track whose media header is mdhd
// (none when nil).
func mp4WithSound(w, h int, n, timescale, duration uint32, mdhdSound []byte) []byte {
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
	soun := box("trak", box("mdia", mdhdSound, box("hdlr", u32s(0, 0), []byte("soun"), make([]byte, 13))))
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

// The first sound track's media header gives the video's audio duration
// and rate; a header that lies about it is refused as the video's is.
func TestProbeMP4SoundTrack(t *testing.T) {
	it, err := Probe(mp4File(640, 360, 300, 30000, 300300))
	if err != nil {
		t.Fatal(err)
	}
	if it.AudioDuration != 10010*time.Millisecond || it.AudioSampleRate != 48000 {
		t.Fatalf("sound track: %v at %d Hz", it.AudioDuration, it.AudioSampleRate)
	}
	// A version-1 header (64-bit duration): 44.1 kHz, 7.5 s.
	v1 := box("mdhd", u32s(1<<24, 0, 0, 0, 0, 44100, 0, 330750, 0))
	if it, err = Probe(mp4WithSound(64, 64, 10, 600, 600, v1)); err != nil || it.AudioDuration != 7500*time.Millisecond || it.AudioSampleRate != 44100 {
		t.Fatalf("v1 header: %v at %d Hz, %v", it.AudioDuration, it.AudioSampleRate, err)
	}
	// No sound track: zero, not an error.
	noSound := mp4WithSound(64, 64, 10, 600, 600, nil)
	noSound = bytesReplace(noSound, []byte("soun"), []byte("text"))
	if it, err = Probe(noSound); err != nil || it.AudioDuration != 0 || it.AudioSampleRate != 0 {
		t.Fatalf("no sound: %+v, %v", it, err)
	}
	for name, f := range map[string][]byte{
		"no media header":   mp4WithSound(64, 64, 10, 600, 600, nil),
		"timescale 0":       mp4WithSound(64, 64, 10, 600, 600, box("mdhd", u32s(0, 0, 0, 0, 600, 0))),
		"short header":      mp4WithSound(64, 64, 10, 600, 600, box("mdhd", u32s(0, 0, 0))),
		"short v1 header":   mp4WithSound(64, 64, 10, 600, 600, box("mdhd", u32s(1<<24, 0, 0, 0, 0, 44100))),
		"25 hours of sound": mp4WithSound(64, 64, 10, 600, 600, box("mdhd", u32s(0, 0, 0, 1, 25*3600, 0))),
	} {
		if _, err := Probe(f); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The probe's duration limit applies to the sound track too.
	long := mp4WithSound(64, 64, 10, 600, 600, box("mdhd", u32s(0, 0, 0, 1, 3600, 0)))
	if _, err := ProbeLimits(long, Limits{MaxDuration: time.Minute}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an hour of sound under a 1-minute limit: %v", err)
	}
}

func bytesReplace(b, old, new []byte) []byte {
	out := append([]byte(nil), b...)
	for i := 0; i+len(old) <= len(out); i++ {
		if string(out[i:i+len(old)]) == string(old) {
			copy(out[i:], new)
		}
	}
	return out
}
