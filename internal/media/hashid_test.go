package media

import (
	"encoding/hex"
	"testing"

	"github.com/zeebo/blake3"
)

// TestHashIDIsTheStringInTheItemsPlace: HashID hashes the identifier as
// vLLM's hasher serializes a str item in the keyed layout — the sorted
// keyword arguments, each key's UTF-8 bytes then the value's — and the
// request's kwargs change it.
func TestHashIDIsTheStringInTheItemsPlace(t *testing.T) {
	opt := HashOptions{ModelID: "Qwen/Qwen2.5-VL-7B-Instruct"}
	byID, err := HashID("image", "photo-1", opt)
	if err != nil {
		t.Fatal(err)
	}
	h := blake3.New()
	h.WriteString("image" + "photo-1" + "model_id" + "Qwen/Qwen2.5-VL-7B-Instruct")
	if want := hex.EncodeToString(h.Sum(nil)); byID != want {
		t.Errorf("HashID %s, want %s", byID, want)
	}
	fs, _ := FieldsFromJSON([]byte(`{"max_pixels": 401408}`))
	opt.MMProcessorKwargs = fs
	if withKw, _ := HashID("image", "photo-1", opt); withKw == byID || withKw == "" {
		t.Errorf("kwargs left the hash %s", withKw)
	}
}
