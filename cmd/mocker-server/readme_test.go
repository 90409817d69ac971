package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The command lines of README.md and docs/*.md run here, so that they
// cannot rot. A fenced
// block right after "<!-- readme-test: run ... -->" holds commands: each
// line starting with "mocker-server " (with "\" continuations, without
// "# comments") is run against the built binary, with every port flag
// moved to free ports. A server (serve, fleet) must start, answer
// /health on every worker and, with an admin port, GET /workers; then it
// gets SIGTERM and must exit 0. Any other command must exit 0 with output.
// A block after "<!-- readme-test: file NAME -->" is written to NAME in the
// commands' working directory, which also sees the repository's configs/
// and testdata/. A block after "<!-- readme-test: shell expect "TEXT" -->"
// is a shell session (readme_shell_test.go): its "mocker-server … &" lines
// are started as servers on free ports, the rest runs in bash with the
// built binary first on PATH (and grpcurl, when the session calls it) and
// must print TEXT.

var (
	readmeMarkerRE = regexp.MustCompile(`^<!-- readme-test: (run|file (\S+)|shell expect "([^"]+)")(\s.*)?-->$`)
	// portFlags are moved to free ports; each gets a run of consecutive
	// ports, since a fleet's worker i (and DP rank r) adds to them.
	// --grpc-port moves only when it names a port: 0 (the OS picks) and
	// -1 (no gRPC server) keep their meaning.
	portFlags = []string{"--port", "--base-port", "--admin-port", "--zmq-kv-events-port", "--zmq-replay-port", "--bootstrap-port", "--grpc-port"}
)

// readmeBlocks returns the marked commands, files and shell sessions of a
// Markdown file.
func readmeBlocks(t *testing.T, path string) (commands [][]string, files map[string]string, shells []shellBlock) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files = map[string]string{}
	sc := bufio.NewScanner(f)
	var marker []string // the marker of the block to read next
	var inBlock bool
	var body []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !inBlock && marker != nil && strings.HasPrefix(line, "```"):
			inBlock, body = true, nil
		case inBlock && line == "```":
			inBlock = false
			switch {
			case marker[1] == "run":
				commands = append(commands, readmeCommands(t, body)...)
			case marker[3] != "":
				shells = append(shells, shellBlock{lines: body, expect: marker[3]})
			default:
				files[marker[2]] = strings.Join(body, "\n") + "\n"
			}
			marker = nil
		case inBlock:
			body = append(body, line)
		default:
			if m := readmeMarkerRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				marker = m
			}
		}
	}
	return commands, files, shells
}

// readmeCommands splits a block into the mocker-server commands it holds.
func readmeCommands(t *testing.T, lines []string) [][]string {
	var out [][]string
	cur := ""
	for _, line := range lines {
		cur += line + "\n"
		words, open, cont := shellWords(cur)
		if open || cont {
			continue // a quoted argument or a "\" continuation goes on
		}
		cur = ""
		if len(words) == 0 || words[0].text != "mocker-server" {
			continue
		}
		var args []string
		for _, w := range words[1:] {
			if w.bare && strings.ContainsAny(w.text, "<>|$;&*") {
				t.Errorf("doc command %q uses the shell (%q); the test runs commands without one", line, w.text)
			}
			args = append(args, w.text)
		}
		out = append(out, args)
	}
	return out
}

// word is one shell word; bare when no part of it was quoted.
type word struct {
	text string
	bare bool
}

// shellWords splits s into words as a POSIX shell does for what the docs
// use: '…' and "…" without escapes, "\" before a newline, "# comments".
// open reports an unclosed quote, cont a final "\" continuation.
func shellWords(s string) (words []word, open, cont bool) {
	var cur strings.Builder
	var quote rune
	in, bare, comment := false, true, false
	flush := func() {
		if in {
			words = append(words, word{cur.String(), bare})
			cur.Reset()
			in, bare = false, true
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case comment:
			if r == '\n' {
				comment = false
			}
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\\' && i+1 < len(rs) && rs[i+1] == '\n':
			flush()
			i++
			cont = i == len(rs)-1
		case r == '\'' || r == '"':
			quote, in, bare = r, true, false
		case r == '#' && !in:
			comment = true
		case r == ' ' || r == '\t' || r == '\n':
			flush()
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	flush()
	return words, quote != 0, cont
}

// withFreePorts moves every port flag of args to a free run of ports and
// adds the ones a server would otherwise take from its defaults.
func withFreePorts(args []string, bases []int) []string {
	out := slices.Clone(args)
	sub := "serve"
	if len(out) > 0 && !strings.HasPrefix(out[0], "-") {
		sub = out[0]
	}
	need := map[string]bool{}
	switch sub {
	case "serve":
		need["--port"] = true
	case "fleet":
		need["--base-port"], need["--admin-port"] = true, true
	}
	for i, flag := range portFlags {
		j := slices.Index(out, flag)
		switch {
		case flag == "--grpc-port" && j >= 0 && j+1 < len(out):
			if n, err := strconv.Atoi(out[j+1]); err == nil && n > 0 {
				out[j+1] = strconv.Itoa(bases[i])
			}
		case j >= 0 && j+1 < len(out):
			out[j+1] = strconv.Itoa(bases[i])
		case need[flag]:
			out = append(out, flag, strconv.Itoa(bases[i]))
		}
	}
	// vLLM's KV events default to tcp://*:5557: give them a free loopback
	// port instead.
	if j := slices.Index(out, "--kv-events-config"); j >= 0 && j+1 < len(out) {
		var kv map[string]any
		if json.Unmarshal([]byte(out[j+1]), &kv) == nil && kv["enable_kv_cache_events"] == true && kv["endpoint"] == nil {
			kv["endpoint"] = "tcp://127.0.0.1:" + strconv.Itoa(bases[len(portFlags)])
			text, _ := json.Marshal(kv)
			out[j+1] = string(text)
		}
	}
	return out
}

func TestREADME_CommandLinesRun(t *testing.T) {
	docs, _ := filepath.Glob(filepath.Join(testutil.RepoRoot(), "docs", "*.md"))
	docs = append([]string{filepath.Join(testutil.RepoRoot(), "README.md")}, docs...)
	total := 0
	for _, doc := range docs {
		commands, files, shells := readmeBlocks(t, doc)
		if len(commands)+len(shells) == 0 {
			continue
		}
		total += len(commands) + len(shells)
		t.Run(filepath.Base(doc), func(t *testing.T) {
			dir := docCommandDir(t, files)
			runDocCommands(t, dir, commands)
			for _, sh := range shells {
				runDocShell(t, dir, sh)
			}
		})
	}
	if total < 14 {
		t.Fatalf("found %d marked doc commands, want the README's fleet and replay examples and the docs' (14 or more)", total)
	}
}

// docCommandDir returns a directory of its own for one document's commands,
// holding the document's files and seeing the repository's configs/ and
// testdata/.
func docCommandDir(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for _, sub := range []string{"configs", "testdata"} {
		if err := os.Symlink(filepath.Join(testutil.RepoRoot(), sub), filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runDocCommands runs one document's commands in dir.
func runDocCommands(t *testing.T, dir string, commands [][]string) {
	bin := buildBinary(t)
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			sub := args[0]
			if sub != "fleet" && (sub == "serve" || strings.HasPrefix(sub, "-")) {
				sub = "serve"
			}
			testutil.WithPortRuns(t, len(portFlags)+1, portRunLength(args), func(bases []int) error {
				ported := withFreePorts(args, bases)
				if sub != "serve" && sub != "fleet" {
					// replay, calibrate --dry-run, …: commands that end by
					// themselves.
					return runReadmeBatch(t, bin, dir, ported)
				}
				return runReadmeServer(t, bin, dir, sub, ported)
			})
		})
	}
}

// portRunLength is how many consecutive free ports each port flag of a doc
// command gets: a fleet numbers its workers' ports up from each base, so a
// run must hold one per worker (docs/ui.md's 64-worker fleet put worker 32's
// HTTP port on the admin port with runs of 32).
func portRunLength(args []string) int {
	n := 32
	if i := slices.Index(args, "--workers"); i >= 0 && i+1 < len(args) {
		if w, err := strconv.Atoi(args[i+1]); err == nil && w > n {
			n = w
		}
	}
	return n
}

// errPortTaken asks WithPortRuns for other ports.
var errPortTaken = errors.New("a port was taken")

// runReadmeBatch runs a command that ends by itself.
func runReadmeBatch(t *testing.T, bin, dir string, args []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || len(out) == 0 {
		t.Fatalf("mocker-server %s: %v, %d bytes of output; stderr:\n%s", strings.Join(args, " "), err, len(out), stderr.String())
	}
	return nil
}

// readmeServer is a doc command's server process.
type readmeServer struct {
	args   []string
	cmd    *exec.Cmd
	exited chan error
	stderr *syncBuffer
}

// runReadmeServer starts a server command, checks that it answers and
// stops it with SIGTERM.
func runReadmeServer(t *testing.T, bin, dir, sub string, args []string) error {
	srv, err := startReadmeServer(t, bin, dir, sub, args)
	if err != nil {
		return err
	}
	srv.check(t)
	srv.stop(t)
	return nil
}

// startReadmeServer starts a server command and waits until it says it
// listens; errPortTaken when one of its ports was taken meanwhile.
func startReadmeServer(t *testing.T, bin, dir, sub string, args []string) (*readmeServer, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	stderr := &syncBuffer{}
	cmd.Stderr, cmd.Stdout = stderr, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ready := regexp.MustCompile(`(?m)^listening on http://`)
	if sub == "fleet" {
		ready = regexp.MustCompile(`(?m)^fleet: \d+ workers`)
	}
	deadline := time.After(60 * time.Second)
	for !ready.MatchString(stderr.String()) {
		select {
		case err := <-exited:
			if strings.Contains(stderr.String(), "address already in use") || strings.Contains(stderr.String(), "Address already in use") {
				return nil, errPortTaken
			}
			t.Fatalf("mocker-server %s exited before serving: %v\n%s", strings.Join(args, " "), err, stderr.String())
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("mocker-server %s did not start in 60 s:\n%s", strings.Join(args, " "), stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return &readmeServer{args: args, cmd: cmd, exited: exited, stderr: stderr}, nil
}

// check asks every worker's /health and, with an admin port, GET /workers.
func (s *readmeServer) check(t *testing.T) {
	args, stderr := s.args, s.stderr
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	get := func(url, key string) error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		return nil
	}
	urls := regexp.MustCompile(`(?m)^listening on (http://\S+)$`).FindAllStringSubmatch(stderr.String(), -1)
	for _, u := range urls {
		if err := get(u[1]+"/health", ""); err != nil {
			t.Error(err)
		}
	}
	if i := slices.Index(args, "--admin-port"); i >= 0 {
		key := ""
		if k := slices.Index(args, "--admin-key"); k >= 0 {
			key = args[k+1]
		}
		if err := get("http://127.0.0.1:"+args[i+1]+"/workers", key); err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d workers answered", len(urls))
}

// stop sends SIGTERM, after which the server must exit 0.
func (s *readmeServer) stop(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("no exit 30 s after SIGTERM")
	}
}
