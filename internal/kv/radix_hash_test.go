package kv

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// sglangHashScript is SGLang's page hashing written the way its source does
// it (hashlib, get_hash_str chaining on the previous hex digest,
// hash_str_to_int64): an independent reference for RadixPageHashes.
const sglangHashScript = `
import hashlib, json, sys

def get_hash_str(token_ids, prior_hash=None):
    hasher = hashlib.sha256()
    if prior_hash:
        hasher.update(bytes.fromhex(prior_hash))
    for t in token_ids:
        hasher.update(t.to_bytes(4, byteorder="little", signed=False))
    return hasher.hexdigest()

def hash_str_to_int64(hash_str):
    v = int(hash_str[:16], 16)
    return v - 2**64 if v >= 2**63 else v

out = []
for case in json.load(sys.stdin):
    tokens, page = case["tokens"], case["page"]
    prior, hashes = None, []
    for i in range(0, len(tokens) - len(tokens) % page, page):
        prior = get_hash_str(tokens[i:i + page], prior)
        hashes.append(hash_str_to_int64(prior))
    out.append(hashes)
json.dump(out, sys.stdout)
`

func TestRadixPageHashesMatchSGLangReference(t *testing.T) {
	py := testutil.DebianPython(t, "hashlib", "json")
	type tc struct {
		Tokens []uint32 `json:"tokens"`
		Page   int      `json:"page"`
	}
	cases := []tc{
		{[]uint32{1, 2, 3, 4, 5}, 1},
		{[]uint32{0, 4294967295, 7, 7, 7, 7, 7, 7, 9}, 2},
		{[]uint32{151643, 872, 198, 9707, 11, 1246, 525, 498, 30, 151645, 198, 151644, 77091, 198, 40, 2776, 1661}, 16},
		{[]uint32{42}, 1},
	}
	in, _ := json.Marshal(cases)
	cmd := exec.Command(py, "-c", sglangHashScript)
	cmd.Stdin = strings.NewReader(string(in))
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("python reference: %v", err)
	}
	var want [][]int64
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("reference output %q: %v", raw, err)
	}
	for i, c := range cases {
		got := RadixPageHashes(c.Tokens, c.Page)
		if len(got) != len(want[i]) {
			t.Fatalf("case %d: %d hashes, reference %d", i, len(got), len(want[i]))
		}
		for j := range got {
			if int64(got[j]) != want[i][j] {
				t.Errorf("case %d page %d: %d, reference %d", i, j, int64(got[j]), want[i][j])
			}
		}
	}
}
