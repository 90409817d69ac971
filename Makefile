# mocker-server — build, run and test targets. `make run` and `make test`
# work on a fresh Debian machine with Go installed: missing libzmq headers
# are installed through apt-get when running as root.

GO       ?= go
BIN      := bin/mocker-server
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
LDFLAGS  := -X main.version=$(VERSION)
RUN_ARGS ?=

.PHONY: all deps build run test test-go check-events bench lint fmt clean

all: build

deps:
	@scripts/ensure-deps.sh

build: deps
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mocker-server

# A demo server on http://127.0.0.1:8000 with KV events (tcp://127.0.0.1:5557)
# and forward-pass metrics (tcp://*:5560) enabled.
run: build
	./$(BIN) serve --zmq-kv-events-port 5557 --zmq-replay-port 5558 --fpm-endpoint 'tcp://*:5560' $(RUN_ARGS)

# The whole suite: vet, race-enabled Go tests, and the cross-language
# KV-event check against a live server.
test: test-go check-events

test-go: deps
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

check-events: build
	@scripts/ensure-deps.sh --python
	scripts/check-events-live.sh $(BIN)

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

lint: deps
	@test -z "$$(gofmt -l .)" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin
