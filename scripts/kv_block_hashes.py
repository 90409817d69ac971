#!/usr/bin/python3
"""kv_block_hashes.py: compute KV block sequence hashes from token ids,
independently of the Go code, as docs/kv-hashing.md defines them.

A KV-aware router that tokenizes prompts itself computes exactly these
numbers; the end-to-end tests compare them with the block_hashes the server
publishes on its KV-event stream.

Input (stdin, JSON):
  {"algo": "xxh3" | "sha256_cbor", "block_size": 16, "hash_seed": "0",
   "sequences": [{"token_ids": [...], "salt": null}, ...]}
Output (stdout, JSON): {"hashes": [[S_0, S_1, ...], ...]}, one list of
sequence hashes (unsigned 64-bit integers) per sequence, full blocks only.

Needs Debian's python3 with python3-xxhash and python3-cbor2
(scripts/ensure-deps.sh --python installs them).
"""
import hashlib
import json
import struct
import sys

import cbor2
import xxhash

XXH3_SEED = 1337


def xxh3_chain(blocks, salt):
    out = []
    prev = None
    for i, block in enumerate(blocks):
        local = xxhash.xxh3_64_intdigest(struct.pack("<%dI" % len(block), *block), seed=XXH3_SEED)
        if i == 0:
            if salt is None:
                seq = local
            else:
                seq = xxhash.xxh3_64_intdigest(struct.pack("<Q", local) + salt.encode("utf-8"), seed=XXH3_SEED)
        else:
            seq = xxhash.xxh3_64_intdigest(struct.pack("<QQ", prev, local), seed=XXH3_SEED)
        out.append(seq)
        prev = seq
    return out


def sha256_cbor_chain(blocks, salt, hash_seed):
    out = []
    parent = hashlib.sha256(cbor2.dumps(hash_seed, canonical=True)).digest()  # NONE_HASH
    for i, block in enumerate(blocks):
        extra = [salt] if (i == 0 and salt is not None) else None
        digest = hashlib.sha256(cbor2.dumps([parent, list(block), extra], canonical=True)).digest()
        out.append(int.from_bytes(digest[24:32], "big"))
        parent = digest
    return out


def main():
    req = json.load(sys.stdin)
    algo = req["algo"]
    size = int(req["block_size"])
    seed = req.get("hash_seed") or "0"
    if size < 1:
        sys.exit("block_size must be positive")
    result = []
    for seq in req["sequences"]:
        ids = seq["token_ids"]
        blocks = [ids[i:i + size] for i in range(0, len(ids) - size + 1, size)]
        salt = seq.get("salt")
        if algo == "xxh3":
            result.append(xxh3_chain(blocks, salt))
        elif algo == "sha256_cbor":
            result.append(sha256_cbor_chain(blocks, salt, seed))
        else:
            sys.exit("unknown algo %r (want xxh3 or sha256_cbor)" % algo)
    json.dump({"hashes": result}, sys.stdout)


if __name__ == "__main__":
    main()
