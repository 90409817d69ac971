package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// shellBlock is a documented shell session: servers started in the
// background ("mocker-server … &"), then commands such as curl and jq that
// talk to them (docs/disaggregation.md's "Try it").
type shellBlock struct {
	lines  []string
	expect string // the session's output must contain it
}

// runDocShell runs a shell session as a reader would, with other ports:
// each background server is started on free ports and waited for (a reader
// types the next line later than the shell would run it), every
// "localhost:P" / "127.0.0.1:P" of the session is moved along with the
// server's --port P, and the rest runs in bash with the built binary
// first on PATH. The session must exit 0 and print expect; then the
// servers get SIGTERM and must exit 0.
func runDocShell(t *testing.T, dir string, block shellBlock) {
	bin := buildBinary(t)
	servers, script := splitShellSession(t, block.lines)
	t.Run("shell session", func(t *testing.T) {
		testutil.WithPortRuns(t, len(servers)*(len(portFlags)+1), 32, func(bases []int) error {
			var started []*readmeServer
			defer func() {
				for _, s := range started {
					s.stop(t)
				}
			}()
			moved := map[string]string{} // a documented port -> the one used
			for i, args := range servers {
				ported := withFreePorts(args, bases[i*(len(portFlags)+1):])
				moved[portOf(args)] = portOf(ported)
				if g := flagValue(args, "--grpc-port"); g != "" {
					moved[g] = flagValue(ported, "--grpc-port")
				}
				srv, err := startReadmeServer(t, bin, dir, "serve", ported)
				if err != nil {
					return err
				}
				started = append(started, srv)
			}
			runShellScript(t, dir, bin, movePorts(script, moved), block.expect)
			return nil
		})
	})
}

// splitShellSession separates a session's background servers from the rest
// of its statements, which it returns as one script.
func splitShellSession(t *testing.T, lines []string) (servers [][]string, script string) {
	var rest []string
	cur := ""
	for _, line := range lines {
		cur += line + "\n"
		words, open, cont := shellWords(cur)
		if open || cont {
			continue
		}
		stmt := cur
		cur = ""
		n := len(words)
		if n >= 2 && words[0].text == "mocker-server" && words[n-1].bare && words[n-1].text == "&" {
			var args []string
			for _, w := range words[1 : n-1] {
				args = append(args, w.text)
			}
			if args[0] == "fleet" || args[0] == "replay" {
				t.Fatalf("doc shell session starts %q in the background; only serve is supported", stmt)
			}
			servers = append(servers, args)
			continue
		}
		rest = append(rest, strings.TrimRight(stmt, "\n"))
	}
	if cur != "" {
		t.Fatalf("doc shell session ends inside a statement: %q", cur)
	}
	return servers, strings.Join(rest, "\n") + "\n"
}

// portOf returns the --port of a serve command's arguments, 8000 when
// absent (the default).
func portOf(args []string) string {
	if p := flagValue(args, "--port"); p != "" {
		return p
	}
	return "8000"
}

// flagValue returns the value after flag in args, "" when absent.
func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

var hostPortRE = regexp.MustCompile(`\b(localhost|127\.0\.0\.1):(\d+)\b`)

// movePorts rewrites the host:port references of a script to the ports
// the servers really use.
func movePorts(script string, moved map[string]string) string {
	return hostPortRE.ReplaceAllStringFunc(script, func(m string) string {
		sub := hostPortRE.FindStringSubmatch(m)
		if p, ok := moved[sub[2]]; ok {
			return sub[1] + ":" + p
		}
		return m
	})
}

// runShellScript runs script in bash (errexit, pipefail) in dir with the
// built binary first on PATH; it must exit 0 within a minute and print
// expect.
func runShellScript(t *testing.T, dir, bin, script, expect string) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs' shell sessions need %s (scripts/ensure-deps.sh --python installs it): %v", tool, err)
		}
	}
	path := filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	if strings.Contains(script, "grpcurl ") {
		// docs/grpc.md's sessions: grpcurl built from its module as the
		// gRPC tests use it (scripts/grpcurl.sh), before the session's clock
		// starts.
		path = filepath.Dir(testutil.Grpcurl(t)) + string(os.PathListSeparator) + path
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+path)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), expect) {
		t.Fatalf("doc shell session: %v; output lacks %q:\n%s\nstderr:\n%s\nscript:\n%s", err, expect, out, stderr.String(), script)
	}
}
