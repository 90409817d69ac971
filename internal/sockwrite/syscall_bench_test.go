package sockwrite

import (
	"net"
	"syscall"
	"testing"
)

// BenchmarkSyscallEntry measures what a batching syscall interface (such
// as io_uring) could save per streamed token at most: the fixed cost of
// entering and leaving the kernel. A batched submission still runs each
// socket's send path, so the saving per write is bounded by these figures,
// to be set against the µs per write of floor-write (docs/BENCHMARKS.md,
// "Batching syscalls").
//
//	go test ./internal/sockwrite -run '^$' -bench SyscallEntry -count 5
func BenchmarkSyscallEntry(b *testing.B) {
	b.Run("getppid", func(b *testing.B) {
		for b.Loop() {
			syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
		}
	})
	// A zero-byte write(2) on a connected loopback TCP socket: the entry,
	// the socket lookup and lock, and nothing to send.
	b.Run("write0-tcp", func(b *testing.B) {
		c, _ := pair(b)
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			b.Fatal(err)
		}
		var werr error
		write := func(fd uintptr) bool {
			_, werr = syscall.Write(int(fd), nil)
			return true
		}
		for b.Loop() {
			if err := rc.Write(write); err != nil || werr != nil {
				b.Fatal(err, werr)
			}
		}
	})
}
