# mocker-server container image.
#
#   docker build -t mocker-server .
#   docker run --rm -p 8000:8000 mocker-server
#   docker run --rm -p 8000:8000 -p 5557:5557 -p 5558:5558 -p 5560:5560 \
#       mocker-server serve --config configs/demo.yaml --host 0.0.0.0
#
# Build stage: the official Go Debian image plus libzmq's headers (the ZMQ
# binding, github.com/pebbe/zmq4, links libzmq through cgo).
FROM golang:1.26-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libzmq3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.1.0-dev
RUN CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/mocker-server ./cmd/mocker-server

# Runtime stage: Debian slim with only the libzmq runtime and CA
# certificates, running as an unprivileged user.
FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libzmq5 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin mocker
COPY --from=build /out/mocker-server /usr/local/bin/mocker-server
# The example configurations, laid out as in the repository so that the
# relative planner_profile_data path of configs/interpolated.yaml resolves
# against the working directory exactly as it does from the repository root.
COPY configs /opt/mocker-server/configs
WORKDIR /opt/mocker-server
USER mocker
# HTTP API and /metrics; KV events PUB and replay ROUTER (when enabled,
# e.g. configs/demo.yaml); forward-pass metrics PUB.
EXPOSE 8000 5557 5558 5560
# The slim image has no curl or wget, and the server has no probe
# subcommand: bash (always present in Debian) opens /dev/tcp, sends
# "GET /health" and checks for a 200 status line. Exec form, so no
# /bin/sh (dash, which has no /dev/tcp) is involved. HEALTH_PORT must
# match --port when the server runs on another port. No --start-period:
# the server listens at once (and dockerfilelint 1.8 misparses that
# option's hyphenated name); with --startup-time, /health answers 503 until
# the engine serves, which 3 retries at 10 s tolerate for ~30 s.
ENV HEALTH_PORT=8000
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${HEALTH_PORT} && printf 'GET /health HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && read -r _ code _ <&3 && [ \"$code\" = 200 ]"]
ENTRYPOINT ["mocker-server"]
CMD ["serve", "--host", "0.0.0.0"]
