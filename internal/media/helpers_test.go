package media

import (
	"hash/crc32"
	"runtime"
)

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// runtimeMem is the process's cumulative allocation, to bound what a call
// allocates.
type runtimeMem struct{ total uint64 }

func (m *runtimeMem) read() {
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.total = s.TotalAlloc
}
