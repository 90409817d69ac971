package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestRun_MMProcessorKwargsTheProcessorRefusesFailAtStartup: a
// --mm-processor-kwargs value the model's processor refuses is one line
// and exit 2, before anything listens.
func TestRun_MMProcessorKwargsTheProcessorRefusesFailAtStartup(t *testing.T) {
	serveFunc = runServer
	defer func() { serveFunc = printConfig }()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "google/gemma-3-4b-it", "--mm-processor-kwargs", `{"do_pan_and_scan": "yes"}`},
			"mocker-server: --mm-processor-kwargs: bad multimodal processor config: mm_processor_kwargs do_pan_and_scan=yes is not a boolean"},
		{[]string{"serve", "Qwen/Qwen2.5-VL-7B-Instruct", "--mm-processor-kwargs", `{"max_pixels": 1.5}`},
			"mocker-server: --mm-processor-kwargs: bad multimodal processor config: mm_processor_kwargs max_pixels=1.5 is not a positive integer"},
		{[]string{"serve", "Qwen/Qwen2.5-VL-7B-Instruct", "--mm-processor-kwargs", `{"min_pixels": 900000, "max_pixels": 401408}`},
			"mocker-server: --mm-processor-kwargs: bad multimodal processor config: mm_processor_kwargs min_pixels 900000 > max_pixels 401408"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var out, errb bytes.Buffer
		err := run(ctx, append(tc.args, "--port", "0"), &out, &errb)
		cancel()
		stderr := errb.String()
		if exitCode(err) != 2 || strings.TrimSpace(stderr) != tc.want || strings.Contains(stderr, "listening") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", tc.args, exitCode(err), stderr, tc.want)
		}
	}
}
