#!/usr/bin/python3
"""Write testdata/shared-prefix-synthetic.jsonl: a small synthetic trace in
Mooncake's format (timestamp ms, input_length, output_length, hash_ids of
512-token blocks) where requests share system prompts.

300 requests, Poisson arrivals at 2 req/s; each request starts with one of 8
shared 4-block prefixes (ids 1000*g + k), then 1-3 blocks of its own and a
partial last block; outputs of 16-256 tokens. Fixed seed: re-running gives
the same file.
"""
import json
import random

rng = random.Random(20251201)
t = 0.0
next_unique = 100000
lines = []
for i in range(300):
    group = rng.randrange(8)
    ids = [1000 * group + k for k in range(4)]
    own = rng.randint(1, 3)
    ids += list(range(next_unique, next_unique + own))
    next_unique += own
    input_length = (len(ids) - 1) * 512 + rng.randint(64, 512)
    lines.append(json.dumps({"timestamp": round(t), "input_length": input_length,
                             "output_length": rng.randint(16, 256), "hash_ids": ids}))
    t += rng.expovariate(2.0) * 1000
with open("testdata/shared-prefix-synthetic.jsonl", "w") as f:
    f.write("\n".join(lines) + "\n")
