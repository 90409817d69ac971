package vllm_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/mocker-server/mocker-server/internal/grpcfront/vllm/vllmpb"
	"github.com/mocker-server/mocker-server/internal/testutil/testcfg"
	"github.com/mocker-server/mocker-server/internal/worker"
)

// env is one real worker (HTTP and gRPC on ports the OS picked, the
// production metrics) and a gRPC client of its VllmEngine service.
type env struct {
	w      *worker.Worker
	url    string // HTTP base URL
	addr   string // gRPC host:port
	conn   *grpc.ClientConn
	client vllmpb.VllmEngineClient
}

// start runs a worker with overlay over the test configuration (gRPC on
// an OS-assigned port, no simulated delay unless overlay sets one).
func start(t *testing.T, overlay map[string]any) *env {
	t.Helper()
	o := map[string]any{"port": 0, "grpc_port": 0, "log_level": "warn", "seed": 7}
	for k, v := range overlay {
		o[k] = v
	}
	cfg := testcfg.Load(t, o)
	opts, err := worker.Production(cfg, worker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := worker.New(cfg, opts)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if w.GRPCAddr() == "" {
		t.Fatal("no gRPC address with grpc_port 0")
	}
	e := dial(t, w.GRPCAddr())
	e.w, e.url = w, w.URL()
	return e
}

// dial returns a client of the gRPC server at addr.
func dial(t *testing.T, addr string) *env {
	t.Helper()
	e := &env{addr: addr}
	var err error
	e.conn, err = grpc.NewClient(e.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(256<<20)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.conn.Close() })
	e.client = vllmpb.NewVllmEngineClient(e.conn)
	return e
}

// generation is what a Generate stream delivered.
type generation struct {
	chunks   [][]uint32
	complete *vllmpb.GenerateComplete
}

// ids are the streamed ids (chunks), else the complete message's.
func (g generation) ids() []uint32 {
	if len(g.chunks) == 0 && g.complete != nil {
		return g.complete.GetOutputIds()
	}
	var all []uint32
	for _, c := range g.chunks {
		all = append(all, c...)
	}
	return all
}

// generate runs one Generate to its end.
func (e *env) generate(t *testing.T, ctx context.Context, req *vllmpb.GenerateRequest) (generation, error) {
	t.Helper()
	st, err := e.client.Generate(ctx, req)
	if err != nil {
		return generation{}, err
	}
	var g generation
	for {
		r, err := st.Recv()
		if err == io.EOF {
			return g, nil
		}
		if err != nil {
			return g, err
		}
		switch x := r.GetResponse().(type) {
		case *vllmpb.GenerateResponse_Chunk:
			if g.complete != nil {
				t.Error("a chunk after the complete message")
			}
			g.chunks = append(g.chunks, x.Chunk.GetTokenIds())
		case *vllmpb.GenerateResponse_Complete:
			if g.complete != nil {
				t.Error("two complete messages")
			}
			g.complete = x.Complete
		}
	}
}

func tokenized(id string, ids []uint32, sp *vllmpb.SamplingParams, stream bool) *vllmpb.GenerateRequest {
	return &vllmpb.GenerateRequest{RequestId: id, Stream: stream, SamplingParams: sp,
		Input: &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{InputIds: ids}}}
}

func u32(v uint32) *uint32 { return &v }
func i32(v int32) *int32   { return &v }

// seq returns n token ids from first on.
func seq(first, n int) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(first + i)
	}
	return ids
}

// post sends a JSON body to the worker's HTTP API and decodes the answer.
func (e *env) post(t *testing.T, path, body string, out any) int {
	t.Helper()
	resp, err := http.Post(e.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, b)
		}
	}
	return resp.StatusCode
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
