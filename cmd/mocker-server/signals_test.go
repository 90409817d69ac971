package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The signal tests run the real binary as a subprocess: signal handling is
// process-wide and must be seen from outside.

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// buildBinary builds mocker-server once per test run.
func buildBinary(t *testing.T) string {
	t.Helper()
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mocker-server-bin")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "mocker-server")
		out, err := exec.Command("go", "build", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// proc is a running server subprocess.
type proc struct {
	cmd    *exec.Cmd
	url    string
	stderr *syncBuffer
	exited chan struct{}
	err    error
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	bin := buildBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--port", "0"}, args...)...)
	pr, pw := io.Pipe()
	p := &proc{cmd: cmd, stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = io.MultiWriter(pw, p.stderr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		pw.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p.url = <-found:
	case <-p.exited:
		t.Fatalf("server exited: %v\n%s", p.err, p.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not listen\n%s", p.stderr)
	}
	return p
}

func (p *proc) waitLog(t *testing.T, substr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.stderr.String(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", substr, p.stderr)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// openStream starts a long stream and returns its reader after the first
// event.
func openStream(t *testing.T, client *http.Client, url string) (*bufio.Reader, io.Closer) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"Hello!"}],"max_tokens":2000,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	return br, resp.Body
}

var slowDecode = []string{"--speedup-ratio", "1", "--timing-model", "fixed", "--fixed-decode-ms", "20"}

func TestSignals_SecondSIGTERMExitsAtOnce(t *testing.T) {
	p := startProc(t, append(slowDecode, "--shutdown-grace", "30")...)
	client := &http.Client{Transport: &http.Transport{}}
	_, body := openStream(t, client, p.url)
	defer body.Close()

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "shutting down gracefully")
	select {
	case <-p.exited:
		t.Fatal("the first SIGTERM did not wait for the in-flight stream")
	case <-time.After(200 * time.Millisecond):
	}
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.exited
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(p.err, &ee) || ee.ExitCode() != exitForced {
		t.Errorf("exit: %v", p.err)
	}
	if took > 100*time.Millisecond {
		t.Errorf("second SIGTERM: exited after %v, want < 100 ms", took)
	}
	t.Logf("second SIGTERM to exit: %v", took)
}

// SIGHUP is a graceful shutdown: every open stream ends with the shutdown
// error event and [DONE], and the process stops cleanly (engines and ZMQ
// publishers closed) with status 0.
func TestSignals_SIGHUPEndsStreamsWithTheShutdownEventAndDone(t *testing.T) {
	const streams = 200
	kv := fmt.Sprintf(`{"enable_kv_cache_events":true,"endpoint":"ipc://%s/kv","replay_endpoint":"ipc://%s/replay"}`,
		t.TempDir(), t.TempDir())
	p := startProc(t, append(slowDecode, "--shutdown-grace", "0.2", "--max-num-seqs", "512",
		"--kv-events-config", kv)...)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams}}
	readers := make([]*bufio.Reader, streams)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			br, body := openStream(t, client, p.url)
			t.Cleanup(func() { body.Close() })
			readers[i] = br
		})
	}
	wg.Wait()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	const want = `data: {"error":{"message":"The server is shutting down.","type":"ServiceUnavailableError","param":null,"code":503}}`
	var bad atomic.Int32
	for i, br := range readers {
		wg.Go(func() {
			rest, err := io.ReadAll(br)
			lines := strings.Split(strings.TrimSpace(string(rest)), "\n\n")
			n := len(lines)
			if err != nil || n < 2 || lines[n-2] != want || lines[n-1] != "data: [DONE]" {
				if bad.Add(1) < 3 {
					t.Errorf("stream %d ended with %q (err %v)", i, lines[max(0, n-2):], err)
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop")
	}
	if p.err != nil || !strings.Contains(p.stderr.String(), "msg=stopped") {
		t.Errorf("exit %v; log:\n%s", p.err, p.stderr)
	}
}
