package replay

import (
	"slices"
	"testing"

	"github.com/mocker-server/mocker-server/internal/kv"
)

// With offload tiers a block that leaves the GPU is removed there and
// stored on the CPU in the same batch; the KV-aware router's index follows
// GPU residency only, so the block no longer counts as a hit.
func TestKVIndexFollowsTheGPUMediumOnly(t *testing.T) {
	x := newKVIndex(2)
	x.apply(0, []kv.Event{{Kind: kv.Stored, BlockHashes: []uint64{1, 2}, BlockSize: 4}})
	x.apply(1, []kv.Event{{Kind: kv.Stored, BlockHashes: []uint64{1, 2}, BlockSize: 4}})
	x.apply(0, []kv.Event{
		{Kind: kv.Removed, BlockHashes: []uint64{2}},
		{Kind: kv.Stored, BlockHashes: []uint64{2}, BlockSize: 4, Medium: kv.MediumCPU},
		{Kind: kv.Removed, BlockHashes: []uint64{1}, Medium: kv.MediumDisk},
	})
	got := make([]int, 2)
	x.overlaps([]uint64{1, 2}, got)
	if !slices.Equal(got, []int{1, 2}) {
		t.Errorf("overlaps %v, want [1 2]: target 0 holds only block 1 on its GPU", got)
	}
}
