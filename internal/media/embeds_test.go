package media

import (
	"errors"
	"os"
	"testing"
)

func TestProbeEmbeds(t *testing.T) {
	// Files NumPy wrote (np.save; testdata/gen.sh does not remake them).
	b, _ := os.ReadFile("testdata/embeds_77x16_f4.npy")
	it, err := ProbeEmbeds(b)
	if err != nil || it.Kind != KindEmbeds || it.EmbedTokens != 77 || it.Frames != 0 {
		t.Fatalf("2-D: %+v, %v", it, err)
	}
	b3, _ := os.ReadFile("testdata/embeds_2x5x8_f2.npy")
	if it, err := ProbeEmbeds(b3); err != nil || it.EmbedTokens != 5 || it.Frames != 2 {
		t.Fatalf("3-D: %+v, %v", it, err)
	}
	cases := map[string]struct {
		data []byte
		want error
	}{
		"truncated data":  {b[:len(b)-4], ErrCorrupt},
		"truncated head":  {b[:20], ErrCorrupt},
		"not a zip":       {[]byte("PK\x03\x04 a torch.save zip"), ErrCorrupt},
		"empty":           {nil, ErrUnsupported},
		"bad version":     {append([]byte("\x93NUMPY\x09\x00"), b[8:]...), ErrUnsupported},
		"one-dimensional": {append(append([]byte{}, b[:10]...), []byte("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }"+string(make([]byte, 70)))...), ErrCorrupt},
	}
	for name, c := range cases {
		if _, err := ProbeEmbeds(c.data); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func FuzzProbeEmbeds(f *testing.F) {
	for _, n := range []string{"testdata/embeds_77x16_f4.npy", "testdata/embeds_2x5x8_f2.npy"} {
		b, _ := os.ReadFile(n)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		it, err := ProbeEmbeds(data)
		if err == nil && (it.EmbedTokens <= 0 || it.Kind != KindEmbeds) {
			t.Fatalf("bad item %+v", it)
		}
		if err == nil {
			Hash(KindEmbeds, data, HashOptions{}) // exact or bytes-only, never a panic
		}
	})
}
