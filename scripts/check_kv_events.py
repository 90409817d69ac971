#!/usr/bin/env python3
"""Check mocker-server's KV cache events on the wire (docs/kv-events.md).

Subscribes to the server's KV event PUB socket, sends a few chat completions
that share a long prefix, and validates every message received:

  * exactly 3 frames; topic frame; sequence frame 8 bytes big-endian,
    contiguous from the first message seen;
  * batch = [float ts, list events, int data_parallel_rank];
  * tags and (map encoding) key sets exactly as vLLM writes them, or (array
    encoding) the positional layout; constant fields (medium GPU, lora null,
    group_idx 0, kv_cache_spec_kind full_attention);
  * hashes and parents are msgpack integers; no duplicate hash in an event,
    parent not among the event's own hashes;
  * BlockStored: block_size == --block-size and
    len(token_ids) == len(block_hashes) * block_size;
  * a parent is announced before any child naming it; every removed hash was
    announced and not removed since; a stored hash is not already resident;
  * prefix reuse: some BlockStored names a parent announced by an earlier
    message (the shared prefix of the requests).
  * LoRA adapters (--lora NAME, repeatable): lora_id and lora_name are both
    null (base model) or a positive int and a string, one id per name; an
    adapter's extra_keys entries start with its name; a parent belongs to
    the same adapter as its children; a hash is never announced under two
    adapters; and the same requests sent under the base model and each
    adapter give the same token ids under different hashes (no cross-adapter
    prefix hit).

Requires Debian's python3 with python3-zmq and python3-msgpack (no other
dependencies; HTTP via urllib). Run it with the first python3 on PATH that
can `import zmq, msgpack`; when started by one that cannot (a pyenv build),
the script re-executes itself once under the first one that can.

Example (server started with --zmq-kv-events-port 5557 --block-size 16):
  python3 scripts/check_kv_events.py --endpoint tcp://127.0.0.1:5557 \
      --http http://127.0.0.1:8000 --block-size 16

By default the SUB connects (the server's PUB binds, e.g. Dynamo-style
--zmq-kv-events-port or a kv_events_config endpoint with '*'); use --bind when
the server's PUB connects to this script.

Exit status: 0 when every check passed, 1 on any violation, 2 on usage or
connection errors.
"""

import argparse
import json
import sys
import threading
import time
import urllib.error
import urllib.request

try:
    import msgpack
    import zmq
except ImportError as exc:  # pragma: no cover - environment problem
    # A pyenv python first on PATH cannot import Debian's python3-zmq /
    # python3-msgpack: re-run under the first python3 that can (once).
    import os
    import subprocess
    if not os.environ.get("CHECK_KV_EVENTS_REEXEC"):
        dirs = os.environ.get("PATH", "").split(os.pathsep) + ["/usr/bin"]
        for d in dirs:
            cand = os.path.join(d, "python3")
            if not os.access(cand, os.X_OK) or os.path.realpath(cand) == os.path.realpath(sys.executable):
                continue
            if subprocess.call([cand, "-c", "import zmq, msgpack"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
                os.environ["CHECK_KV_EVENTS_REEXEC"] = "1"
                os.execv(cand, [cand] + sys.argv)
    sys.stderr.write(
        "error: %s\nthis script needs python3-zmq and python3-msgpack; run it with "
        "Debian's interpreter (e.g. /usr/bin/python3)\n" % exc)
    sys.exit(2)

MAX_U64 = (1 << 64) - 1
STORED_KEYS = ["type", "block_hashes", "parent_block_hash", "token_ids", "block_size",
               "lora_id", "medium", "lora_name", "extra_keys", "group_idx",
               "kv_cache_spec_kind"]
REMOVED_KEYS = ["type", "block_hashes", "medium", "group_idx"]
CLEARED_KEYS = ["type"]


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


class Checker:
    """Validates messages one by one and keeps the consumer's view."""

    def __init__(self, block_size, topic):
        self.block_size = block_size
        self.topic = topic
        self.resident = set()
        self.first_seq = None
        self.next_seq = None
        self.messages = 0
        self.passed = 0
        self.failed = 0
        self.errors = []
        self.counts = {"BlockStored": 0, "BlockRemoved": 0, "AllBlocksCleared": 0}
        self.encodings = set()
        self.reused_parents = 0
        self.msg_errors = []
        self.announced_in = {}
        self.owner = {}          # hash -> adapter name ("" = base), never forgotten
        self.lora_ids = {}       # adapter name -> lora_id
        self.first_blocks = {}   # first block's token ids -> {adapter: hash}
        self.stored_under = {}   # adapter -> BlockStored count

    def fail(self, what):
        self.msg_errors.append(what)

    def check_message(self, frames):
        self.messages += 1
        self.msg_errors = []
        idx = self.messages
        self._check(frames, idx)
        if self.msg_errors:
            self.failed += 1
            for e in self.msg_errors:
                self.errors.append("message %d: %s" % (idx, e))
        else:
            self.passed += 1

    def _check(self, frames, idx):
        if len(frames) != 3:
            self.fail("has %d frames, want 3 [topic, seq, payload]" % len(frames))
            return
        topic, seq_frame, payload = frames
        if not topic.startswith(self.topic.encode()):
            self.fail("topic frame %r does not start with %r" % (topic, self.topic))
        if len(seq_frame) != 8:
            self.fail("sequence frame is %d bytes, want 8" % len(seq_frame))
            return
        seq = int.from_bytes(seq_frame, "big")
        if self.first_seq is None:
            self.first_seq = seq
            if seq != 0:
                print("note: first sequence seen is %d, not 0 (server not fresh?): "
                      "history before it is unknown" % seq)
        elif seq != self.next_seq:
            self.fail("sequence %d, want %d (gap or reordering)" % (seq, self.next_seq))
        self.next_seq = seq + 1

        try:
            batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        except Exception as exc:  # noqa: BLE001 - report any decode error
            self.fail("payload is not msgpack: %s" % exc)
            return
        if not isinstance(batch, list) or len(batch) != 3:
            self.fail("batch is not a 3-element array: %r" % (batch,))
            return
        ts, events, rank = batch
        if not isinstance(ts, float):
            self.fail("ts %r is not a float" % (ts,))
        if not is_int(rank) or rank < 0:
            self.fail("data_parallel_rank %r is not a non-negative int" % (rank,))
        if not isinstance(events, list) or not events:
            self.fail("events %r is not a non-empty array" % (events,))
            return
        for i, ev in enumerate(events):
            self._check_event(ev, "event %d" % i, idx)

    def _hashes(self, v, where):
        if not isinstance(v, list) or not v:
            self.fail("%s: block_hashes %r is not a non-empty array" % (where, v))
            return []
        for h in v:
            if not is_int(h) or h < 0 or h > MAX_U64:
                self.fail("%s: block hash %r is not an unsigned 64-bit integer" % (where, h))
                return []
        if len(set(v)) != len(v):
            self.fail("%s: duplicate hash within one event" % where)
        return v

    def _check_event(self, ev, where, idx):
        if isinstance(ev, dict):
            self.encodings.add("map")
            tag = ev.get("type")
            want = {"BlockStored": STORED_KEYS, "BlockRemoved": REMOVED_KEYS,
                    "AllBlocksCleared": CLEARED_KEYS}.get(tag)
            if want is None:
                self.fail("%s: unknown type %r" % (where, tag))
                return
            if sorted(ev.keys()) != sorted(want):
                self.fail("%s: %s keys %s, want exactly %s" % (where, tag, sorted(ev.keys()), want))
                return
            if tag == "BlockStored":
                adapter = self._adapter(ev["lora_id"], ev["lora_name"], where)
                if ev["medium"] != "GPU" or ev["group_idx"] != 0 or \
                        ev["kv_cache_spec_kind"] != "full_attention":
                    self.fail("%s: medium/group_idx/kv_cache_spec_kind %r/%r/%r" % (
                        where, ev["medium"], ev["group_idx"], ev["kv_cache_spec_kind"]))
                extra = ev["extra_keys"]
                if not isinstance(extra, list) or len(extra) != len(ev["block_hashes"] or []):
                    self.fail("%s: extra_keys %r needs one entry per block" % (where, extra))
                elif any(e is not None and not (isinstance(e, list) and
                                                all(isinstance(s, str) for s in e)) for e in extra):
                    self.fail("%s: extra_keys entries must be null or string arrays" % where)
                elif adapter and any(not e or e[0] != adapter for e in extra):
                    self.fail("%s: extra_keys %r of adapter %r do not start with its name" % (where, extra, adapter))
                self._stored(ev["block_hashes"], ev["parent_block_hash"], ev["token_ids"],
                             ev["block_size"], where, idx, adapter)
            elif tag == "BlockRemoved":
                if ev["medium"] != "GPU" or ev["group_idx"] != 0:
                    self.fail("%s: medium/group_idx %r/%r" % (where, ev["medium"], ev["group_idx"]))
                self._removed(ev["block_hashes"], where)
            else:
                self._cleared()
        elif isinstance(ev, list) and ev:
            self.encodings.add("array")
            tag = ev[0]
            if tag == "BlockStored":
                if len(ev) != 8:
                    self.fail("%s: BlockStored array has %d elements, want 8" % (where, len(ev)))
                    return
                if ev[6] != "GPU":
                    self.fail("%s: medium %r" % (where, ev[6]))
                adapter = self._adapter(ev[5], ev[7], where)
                self._stored(ev[1], ev[2], ev[3], ev[4], where, idx, adapter)
            elif tag == "BlockRemoved":
                if len(ev) != 3 or ev[2] != "GPU":
                    self.fail("%s: BlockRemoved array %r, want [tag, hashes, \"GPU\"]" % (where, ev))
                    return
                self._removed(ev[1], where)
            elif tag == "AllBlocksCleared":
                if len(ev) != 1:
                    self.fail("%s: AllBlocksCleared array has %d elements" % (where, len(ev)))
                self._cleared()
            else:
                self.fail("%s: unknown tag %r" % (where, tag))
        else:
            self.fail("%s: neither a map nor a tagged array: %r" % (where, ev))

    def _adapter(self, lora_id, lora_name, where):
        """Returns the event's adapter name ("" for the base model)."""
        if lora_id is None and lora_name is None:
            return ""
        if not is_int(lora_id) or lora_id < 1 or not isinstance(lora_name, str) or not lora_name:
            self.fail("%s: lora_id/lora_name %r/%r: want both null or a positive int and a name" % (
                where, lora_id, lora_name))
            return ""
        if self.lora_ids.setdefault(lora_name, lora_id) != lora_id:
            self.fail("%s: adapter %r has lora_id %d, earlier %d" % (
                where, lora_name, lora_id, self.lora_ids[lora_name]))
        return lora_name

    def _stored(self, hashes, parent, tokens, block_size, where, idx, adapter=""):
        self.counts["BlockStored"] += 1
        self.stored_under[adapter] = self.stored_under.get(adapter, 0) + 1
        hashes = self._hashes(hashes, where)
        if not hashes:
            return
        for h in hashes:
            if self.owner.setdefault(h, adapter) != adapter:
                self.fail("%s: hash %#x announced under adapter %r and earlier under %r" % (
                    where, h, adapter, self.owner[h]))
        if parent is not None and parent in self.owner and self.owner[parent] != adapter:
            self.fail("%s: parent %#x belongs to adapter %r, the blocks to %r" % (
                where, parent, self.owner[parent], adapter))
        if parent is None and isinstance(tokens, list) and len(tokens) >= self.block_size:
            self.first_blocks.setdefault(tuple(tokens[:self.block_size]), {})[adapter] = hashes[0]
        if block_size != self.block_size:
            self.fail("%s: block_size %r, server expected %d" % (where, block_size, self.block_size))
        if not isinstance(tokens, list) or not all(is_int(t) and t >= 0 for t in tokens):
            self.fail("%s: token_ids is not an array of unsigned ints" % where)
        elif len(tokens) != len(hashes) * self.block_size:
            self.fail("%s: %d token_ids for %d blocks of %d" % (
                where, len(tokens), len(hashes), self.block_size))
        if parent is not None:
            if not is_int(parent) or parent < 0 or parent > MAX_U64:
                self.fail("%s: parent_block_hash %r is not an unsigned 64-bit integer" % (where, parent))
            elif parent in hashes:
                self.fail("%s: parent is among the event's own hashes" % where)
            elif parent not in self.resident:
                if self.first_seq == 0:
                    self.fail("%s: parent %#x was not announced (or was removed)" % (where, parent))
            elif self.announced_in.get(parent, idx) < idx:
                self.reused_parents += 1
        for h in hashes:
            if h in self.resident:
                self.fail("%s: hash %#x stored again while resident" % (where, h))
            self.resident.add(h)
            self.announced_in[h] = idx

    def _removed(self, hashes, where):
        self.counts["BlockRemoved"] += 1
        for h in self._hashes(hashes, where):
            if h not in self.resident:
                if self.first_seq == 0:
                    self.fail("%s: removal of %#x, which was not announced (or already removed)" % (where, h))
            self.resident.discard(h)

    def _cleared(self):
        self.counts["AllBlocksCleared"] += 1
        self.resident.clear()


def http_json(url, body=None, api_key=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    req.add_header("Content-Type", "application/json")
    if api_key:
        req.add_header("Authorization", "Bearer " + api_key)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def send_requests(args, models, errors):
    # A long shared prefix spans several blocks at any block size.
    prefix = " ".join("shared-context-word-%d" % i for i in range(300))
    for model, i in [(m, i) for m in models for i in range(args.requests)]:
        body = {
            "model": model,
            "messages": [{"role": "user", "content": "%s\nQuestion %d: what is %d + %d?" % (prefix, i, i, i)}],
            "max_tokens": args.max_tokens,
        }
        try:
            http_json(args.http.rstrip("/") + "/v1/chat/completions", body, args.api_key)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            errors.append("chat completion %d (%s) failed: %s" % (i, model, exc))
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--endpoint", required=True, help="server KV event PUB endpoint, e.g. tcp://127.0.0.1:5557")
    ap.add_argument("--http", required=True, help="server base URL, e.g. http://127.0.0.1:8000")
    ap.add_argument("--block-size", type=int, required=True, help="the server's block size")
    ap.add_argument("--bind", action="store_true", help="bind the SUB (the server's PUB connects)")
    ap.add_argument("--topic", default="", help="topic prefix to subscribe to (default: all)")
    ap.add_argument("--model", default="", help="model name (default: first of /v1/models)")
    ap.add_argument("--api-key", default="", help="bearer token for the HTTP API")
    ap.add_argument("--lora", action="append", default=[],
                    help="a served LoRA adapter: the requests are sent again under it (repeatable)")
    ap.add_argument("--requests", type=int, default=4, help="chat completions to send (default 4)")
    ap.add_argument("--max-tokens", type=int, default=8, help="max_tokens per request (default 8)")
    ap.add_argument("--settle", type=float, default=1.0, help="seconds to poll before sending (default 1)")
    ap.add_argument("--quiet", type=float, default=1.0,
                    help="stop once no message arrived for this long after the requests (default 1)")
    ap.add_argument("--timeout", type=float, default=60.0, help="overall time limit in seconds")
    args = ap.parse_args()
    if args.block_size < 1:
        ap.error("--block-size must be >= 1")

    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.RCVHWM, 0)
    sub.setsockopt(zmq.SUBSCRIBE, args.topic.encode())
    try:
        if args.bind:
            sub.bind(args.endpoint)
        else:
            sub.connect(args.endpoint)
    except zmq.ZMQError as exc:
        print("error: cannot %s %s: %s" % ("bind" if args.bind else "connect", args.endpoint, exc))
        return 2
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    checker = Checker(args.block_size, args.topic)

    def drain(timeout_ms):
        got = 0
        for _ in poller.poll(timeout_ms):
            while True:
                try:
                    frames = sub.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                checker.check_message(frames)
                got += 1
        return got

    # Settle: poll (never just sleep) so the subscription is forwarded.
    deadline = time.monotonic() + args.settle
    while time.monotonic() < deadline:
        drain(50)
    if checker.messages:
        print("note: %d message(s) arrived before any request (server not idle?)" % checker.messages)

    model = args.model
    if not model:
        try:
            models = http_json(args.http.rstrip("/") + "/v1/models", api_key=args.api_key)
            model = models["data"][0]["id"]
        except (urllib.error.URLError, OSError, ValueError, KeyError, IndexError) as exc:
            print("error: cannot list models at %s: %s" % (args.http, exc))
            return 2

    http_errors = []
    sender = threading.Thread(target=send_requests, args=(args, [model] + args.lora, http_errors), daemon=True)
    sender.start()
    end = time.monotonic() + args.timeout
    last = time.monotonic()
    while time.monotonic() < end:
        if drain(50):
            last = time.monotonic()
        elif not sender.is_alive() and time.monotonic() - last >= args.quiet:
            break
    timed_out = sender.is_alive() or time.monotonic() >= end
    sub.close()
    ctx.term()

    problems = list(checker.errors)
    problems += http_errors
    if timed_out:
        problems.append("timed out after %.0f s" % args.timeout)
    if checker.counts["BlockStored"] == 0:
        problems.append("no BlockStored event received (events enabled? prefix caching on? "
                        "slow joiner: increase --settle)")
    elif args.requests > 1 and checker.reused_parents == 0:
        problems.append("no BlockStored named a parent announced by an earlier message: "
                        "the shared prompt prefix was not reused")

    for adapter in args.lora:
        if not checker.stored_under.get(adapter):
            problems.append("no BlockStored event under adapter %r" % adapter)
    if args.lora:
        pairs = 0
        for owners in checker.first_blocks.values():
            if len(owners) > 1:
                pairs += 1
                if len(set(owners.values())) != len(owners):
                    problems.append("the same first block has one hash under several adapters: %r" % owners)
        if pairs == 0:
            problems.append("no first block was stored under two adapters (the same requests were sent under each)")

    print("received %d messages (encoding %s): %s; %d hashes resident" % (
        checker.messages, "/".join(sorted(checker.encodings)) or "-",
        ", ".join("%s %d" % kv for kv in checker.counts.items()), len(checker.resident)))
    for p in problems:
        print("FAIL: " + p)
    failed = checker.failed + (len(problems) - len(checker.errors))
    print("%d passed, %d failed" % (checker.passed, failed))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
