package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// GrpcurlVersion is the grpcurl release the gRPC tests build from its Go
// module (an independent gRPC client: reflection, JSON in and out).
const GrpcurlVersion = "v1.9.4"

var grpcurlMu sync.Mutex

// Grpcurl returns a grpcurl binary built from its module into the
// repository's .cache (once per machine; later runs reuse it).
func Grpcurl(t testing.TB) string {
	t.Helper()
	grpcurlMu.Lock()
	defer grpcurlMu.Unlock()
	dir := filepath.Join(RepoRoot(), ".cache", "grpcurl-"+GrpcurlVersion)
	bin := filepath.Join(dir, "grpcurl")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	cmd := exec.Command("go", "install", "github.com/fullstorydev/grpcurl/cmd/grpcurl@"+GrpcurlVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building grpcurl %s: %v\n%s", GrpcurlVersion, err, b)
	}
	return bin
}
