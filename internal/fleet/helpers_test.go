package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pebbe/zmq4"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmihailenco/msgpack/v5"
	"go.uber.org/goleak"

	"github.com/mocker-server/mocker-server/internal/config"
	"github.com/mocker-server/mocker-server/internal/testutil"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLoadOptions are command-line settings for Plan in tests: no
// environment, a fixed host name.
func testLoadOptions(overlay map[string]any) config.LoadOptions {
	return testcfg.Options(overlay)
}

// kvSub is a ZMQ SUB socket on one worker rank's KV-event PUB, used from
// one goroutine, with the batches it received.
type kvSub struct {
	sub  *testutil.ZMQSocket
	live []kvBatch
}

// kvBatch is one received KV event batch: its sequence number and the
// "type" of each event.
type kvBatch struct {
	seq   uint64
	kinds []string
}

func newKVSub(t *testing.T, endpoint string) *kvSub {
	t.Helper()
	return &kvSub{sub: testutil.NewZMQSub(t, nil, endpoint, false, "")}
}

// take receives one batch within timeout; false when none came.
func (s *kvSub) take(t *testing.T, timeout time.Duration) bool {
	t.Helper()
	frames := s.sub.Recv(timeout)
	if frames == nil {
		return false
	}
	if len(frames) != 3 || len(frames[1]) != 8 {
		t.Fatalf("KV event message has frames %q", frames)
	}
	s.live = append(s.live, kvBatch{seq: binary.BigEndian.Uint64(frames[1]), kinds: eventKinds(t, frames[2])})
	return true
}

// drain takes batches until none arrives for quiet.
func (s *kvSub) drain(t *testing.T, quiet time.Duration) {
	for s.take(t, quiet) {
	}
}

// eventKinds decodes a msgpack KV event batch [ts, [events], rank] in the
// map encoding and returns each event's "type". (It is decoded with an
// independent msgpack library, not with the server's encoder.)
func eventKinds(t *testing.T, payload []byte) []string {
	t.Helper()
	var batch []any
	if err := msgpack.Unmarshal(payload, &batch); err != nil || len(batch) < 2 {
		t.Fatalf("KV batch %x: %v", payload, err)
	}
	evs, _ := batch[1].([]any)
	var kinds []string
	for _, e := range evs {
		m, _ := e.(map[string]any)
		k, _ := m["type"].(string)
		kinds = append(kinds, k)
	}
	return kinds
}

// replayAll asks a replay ROUTER for every batch from seq 0 and returns
// their sequence numbers, up to the end marker.
func replayAll(t *testing.T, endpoint string) []uint64 {
	t.Helper()
	d := testutil.NewZMQSocket(t, nil, zmq4.DEALER, endpoint, false, nil)
	start := make([]byte, 8)
	if _, err := d.Sock.SendMessage("", start); err != nil {
		t.Fatal(err)
	}
	var seqs []uint64
	for {
		frames := d.Recv(3 * time.Second)
		if frames == nil {
			t.Fatalf("replay from %s: no reply within 3s (after %d batches)", endpoint, len(seqs))
		}
		// [empty, (topic,) seq, payload]; the end marker has seq -1.
		seqFrame := frames[len(frames)-2]
		if bytes.Equal(seqFrame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
			return seqs
		}
		seqs = append(seqs, binary.BigEndian.Uint64(seqFrame))
	}
}

// stream is one streamed chat completion read in the background.
type stream struct {
	tokens chan time.Time // one per content chunk
	done   chan error     // nil after [DONE], else why it failed
	usage  int            // completion_tokens of the final usage chunk
	text   strings.Builder
}

// startStream posts a streamed chat completion and reads it in the
// background.
func startStream(t *testing.T, client *http.Client, url, model, prompt string, maxTokens int) *stream {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`,
		model, prompt, maxTokens)
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("stream to %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("stream to %s: %d %s", url, resp.StatusCode, b)
	}
	s := &stream{tokens: make(chan time.Time, maxTokens+8), done: make(chan error, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if data == "[DONE]" {
				s.done <- nil
				return
			}
			var chunk struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Usage *struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
				Error any `json:"error"`
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				s.done <- fmt.Errorf("bad chunk %q: %w", data, err)
				return
			}
			if chunk.Error != nil {
				s.done <- fmt.Errorf("error event: %s", data)
				return
			}
			if chunk.Usage != nil {
				s.usage = chunk.Usage.CompletionTokens
			}
			for _, c := range chunk.Choices {
				if c.Delta.Content != "" {
					s.text.WriteString(c.Delta.Content)
					s.tokens <- time.Now()
				}
			}
		}
		err := sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		s.done <- err
	}()
	return s
}

// waitTokens waits for n more tokens.
func (s *stream) waitTokens(t *testing.T, n int, timeout time.Duration) []time.Time {
	t.Helper()
	var got []time.Time
	deadline := time.After(timeout)
	for len(got) < n {
		select {
		case ts := <-s.tokens:
			got = append(got, ts)
		case <-deadline:
			t.Fatalf("got %d of %d tokens in %v", len(got), n, timeout)
		}
	}
	return got
}

// finish waits for the end of the stream and returns its remaining tokens.
func (s *stream) finish(t *testing.T, timeout time.Duration) ([]time.Time, error) {
	t.Helper()
	var got []time.Time
	deadline := time.After(timeout)
	for {
		select {
		case ts := <-s.tokens:
			got = append(got, ts)
		case err := <-s.done:
			for {
				select {
				case ts := <-s.tokens:
					got = append(got, ts)
				default:
					return got, err
				}
			}
		case <-deadline:
			t.Fatalf("stream did not end within %v", timeout)
			return nil, nil
		}
	}
}

// scrape parses a /metrics exposition.
func scrape(t *testing.T, client *http.Client, url, key string) map[string]*dto.MetricFamily {
	t.Helper()
	return testutil.Scrape(t, client, url+"/metrics", key).Families
}

// sum adds a family's counter/gauge values over series with the labels.
func sum(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	total := 0.0
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		if c := m.GetCounter(); c != nil {
			total += c.GetValue()
		} else if g := m.GetGauge(); g != nil {
			total += g.GetValue()
		}
	}
	return total
}

// send sends a request, with the bearer key when one is given.
func send(t *testing.T, client *http.Client, method, url, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// adminCall sends a request and decodes the JSON answer.
func adminCall(t *testing.T, client *http.Client, method, url, key, body string) (int, any) {
	t.Helper()
	resp := send(t, client, method, url, key, body)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); len(raw) > 0 && !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q", method, url, ct)
	}
	var v any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s %s: not JSON: %s", method, url, raw)
		}
	}
	return resp.StatusCode, v
}

// startWithAdmin starts members with an admin API on a free port guarded by
// key, stopped at the end of the test, and returns the fleet and the admin
// URL.
func startWithAdmin(t *testing.T, members []Member, key string) (*Fleet, string) {
	t.Helper()
	adminURL := make(chan string, 1)
	f, err := Start(context.Background(), members, Options{AdminAddr: "127.0.0.1:0", AdminKey: key,
		AdminReady: func(u string) { adminURL <- u }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f, <-adminURL
}
