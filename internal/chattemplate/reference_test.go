package chattemplate

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mocker-server/mocker-server/internal/testutil"
)

// The references are independent renderers run as separate processes:
// Python's Jinja2 set up as transformers sets it up (the truth), and
// @huggingface/jinja, the engine of transformers.js (a second opinion).
// Under CI=true a missing interpreter or package fails the test instead of
// skipping it.

// refCase is one render request in the references' stdin protocol.
type refCase struct {
	Messages             json.RawMessage            `json:"messages"`
	Tools                json.RawMessage            `json:"tools,omitempty"`
	Documents            json.RawMessage            `json:"documents,omitempty"`
	AddGenerationPrompt  bool                       `json:"add_generation_prompt"`
	ContinueFinalMessage bool                       `json:"continue_final_message"`
	Kwargs               map[string]json.RawMessage `json:"kwargs,omitempty"`
	BOSToken             string                     `json:"bos_token"`
	EOSToken             string                     `json:"eos_token"`
}

func (c refCase) input() Input {
	return Input{
		Messages: c.Messages, Tools: c.Tools, Documents: c.Documents, Kwargs: c.Kwargs,
		AddGenerationPrompt: c.AddGenerationPrompt, ContinueFinalMessage: c.ContinueFinalMessage,
		BOSToken: c.BOSToken, EOSToken: c.EOSToken,
	}
}

// refResult is a reference's answer for one case.
type refResult struct {
	Text  *string `json:"text"`
	Error string  `json:"error"`
	Raise bool    `json:"raise"`
}

// fixedNow is the clock of every differential render, here and in the
// references, so templates that print today's date agree.
const fixedNow = "2026-07-04T09:05:06"

// fixedClock is fixedNow as a Template clock (local time, as the
// references read it).
func fixedClock() func() time.Time {
	now, err := time.ParseInLocation("2006-01-02T15:04:05", fixedNow, time.Local)
	if err != nil {
		panic(err)
	}
	return func() time.Time { return now }
}

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// nodeModules installs (once, when missing) and returns the npm packages
// of scripts/npm-ref/package.json.
func nodeModules(t testing.TB) string {
	t.Helper()
	return testutil.NodeModules(t)
}

// pythonWithJinja2 returns Debian's python3 when it can import jinja2 (the
// pyenv python3 first on PATH cannot see Debian's modules).
func pythonWithJinja2(t testing.TB) string {
	t.Helper()
	for _, candidate := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(candidate, "-c", "import jinja2").Run(); err == nil {
			return candidate
		}
	}
	skipOrFail(t, "no python3 with jinja2 (install python3-jinja2: scripts/ensure-deps.sh --python)")
	return ""
}

// refJob is one template with the cases to render through it.
type refJob struct {
	Template string    `json:"template"`
	Cases    []refCase `json:"cases"`
}

// runReference renders every job through one reference program (one
// process for all of them: interpreter start-up dominates otherwise).
func runReference(t testing.TB, cmd *exec.Cmd, jobs []refJob) [][]refResult {
	t.Helper()
	request, err := json.Marshal(map[string]any{"now": fixedNow, "jobs": jobs})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(request)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd.Path, err, stderr.String())
	}
	var results [][]refResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(jobs) {
		t.Fatalf("%s: %d results for %d jobs (%v)", cmd.Path, len(results), len(jobs), err)
	}
	for i := range jobs {
		if len(results[i]) != len(jobs[i].Cases) {
			t.Fatalf("%s: job %d: %d results for %d cases", cmd.Path, i, len(results[i]), len(jobs[i].Cases))
		}
	}
	return results
}

func renderJinja2(t testing.TB, jobs []refJob) [][]refResult {
	t.Helper()
	script := filepath.Join("testdata", "reference", "render_jinja2.py")
	return runReference(t, exec.Command(pythonWithJinja2(t), script), jobs)
}

func renderHFJinja(t testing.TB, jobs []refJob) [][]refResult {
	t.Helper()
	modules := nodeModules(t)
	node, err := exec.LookPath("node")
	if err != nil {
		skipOrFail(t, "node not found")
	}
	cmd := exec.Command(node, filepath.Join("testdata", "reference", "render_hfjinja.mjs"))
	cmd.Env = append(os.Environ(), "NODE_REF_MODULES="+modules)
	return runReference(t, cmd, jobs)
}
