#!/usr/bin/env python3
"""Transcribe aiconfigurator's silicon sample into the hardware validation set.

aiconfigurator (ai-dynamo/aiconfigurator, Apache-2.0) keeps, beside its operator
tables, a dump of end-to-end serving measurements from NVIDIA's benchmark runs:
aic-core/src/aiconfigurator_core/systems/silicon_sample.csv (one row per run:
engine and release, model, GPU, parallelism, ISL/OSL, concurrency, measured TTFT
and TPOT). This script turns the rows the mock can replay into points of
testdata/hardware/published.csv (source key aic-silicon-sample, ids p2001 on),
replacing the points of that source already there, so rerunning it on the same
file changes nothing. The rules (testdata/hardware/README.md says why):

- aggregated serving only (mode agg; the disaggregated rows are not taken), on
  the GPUs and models the mock has (GPUS, DENSE, MOE below), with tensor
  parallelism only: pipeline, attention data and expert parallelism of 1 (an
  empty or zero field counts as 1) and a MoE model's experts split over the
  same TP;
- each row gives two points, ttft_ms and tpot_ms, statistic mean, load closed at
  concurrency = batch_size, the request count left to the table's default;
- weights from precision (fp8 -> fp8, fp4 -> nvfp4, bf16 or empty -> bf16; other
  precisions are not taken); NVIDIA's quantized releases (nvidia/X-FP8,
  nvidia/X-NVFP4) are replayed as the model of the same shape;
- KV cache fp8 for TensorRT-LLM with fp8 or nvfp4 weights (TensorRT-LLM's FP8
  path quantizes the KV cache with the weights), auto otherwise;
- a concurrency above the mock's default running limit for the engine (256 for
  trtllm) passes --max-num-seqs equal to it, so the limit does not throttle a
  closed loop the real server ran.

Usage: python3 scripts/aic-silicon-points.py SILICON_SAMPLE.csv COMMIT
(rewrites testdata/hardware/published.csv in place).
"""

import csv
import io
import pathlib
import sys

SOURCE = "aic-silicon-sample"
FIRST_ID = 2001
POINTS = pathlib.Path(__file__).resolve().parents[1] / "testdata/hardware/published.csv"

# NVIDIA's quantized releases, replayed as the model of the same shape.
SAME_SHAPE = {
    "nvidia/Llama-3.1-8B-Instruct-FP8": "meta-llama/Llama-3.1-8B-Instruct",
    "nvidia/Qwen3-32B-NVFP4": "Qwen/Qwen3-32B",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-ai/DeepSeek-R1",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-ai/DeepSeek-V3",  # V3.1 keeps V3's shape
}
WEIGHTS = {"fp8": "fp8", "fp4": "nvfp4", "bf16": "bf16", "": "bf16"}
# The mock's default running-batch limit per engine under --hardware where a
# closed loop could exceed it (vLLM's is 1024 on these GPUs, SGLang's comes
# from its pool and is at least 2048).
RUNNING_LIMIT = {"trtllm": 256}


# Models whose shape the mock has (its catalogue, docs/hardware.md), and
# which of them are MoE (whose expert split must be the TP split). The
# sample's other models (MiniMax-M2.5, gpt-oss-120b, Qwen3.5-397B-A17B,
# GLM-5, Kimi-K2.5) and GPUs (b300_sxm, gb300) are not taken.
DENSE = {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-70B", "Qwen/Qwen3-32B"}
MOE = {"deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-235B-A22B-FP8"}
GPUS = {"h100_sxm", "h200_sxm", "b200_sxm", "gb200"}


def one(field):
    # An empty or zero parallel size is the sample's "not used".
    return field in ("", "0", "1")


def tensor_parallel_only(r, model):
    if not (one(r["pp_size"]) and one(r["attention_dp_size"])):
        return False
    return model in DENSE or (one(r["moe_ep_size"]) and r["moe_tp_size"] in ("", "0", r["tp_size"]))


def points(rows, commit):
    out = []
    for r in rows:
        model = SAME_SHAPE.get(r["model_path"], r["model_path"])
        if r["mode"] != "agg" or r["precision"] not in WEIGHTS or r["system"] not in GPUS:
            continue
        if model not in DENSE | MOE or not tensor_parallel_only(r, model):
            continue
        tp = r["tp_size"]
        weights = WEIGHTS[r["precision"]]
        engine = r["backend"]
        kv = "fp8" if engine == "trtllm" and weights in ("fp8", "nvfp4") else "auto"
        conc = int(r["batch_size"])
        args = f"--max-num-seqs {conc}" if conc > RUNNING_LIMIT.get(engine, conc) else ""
        table = (f"silicon_sample.csv row {r['id']} (aiconfigurator {commit[:12]}; "
                 f"{engine} {r['backend_version'] or 'release not recorded'}; {r['silicon_data_source']})")
        base = [SOURCE, table, model, r["system"], tp,
                weights, kv, engine, r["isl"], r["osl"], "closed", str(conc), "", ""]
        for metric, col in (("ttft_ms", "silicon_ttft_ms"), ("tpot_ms", "silicon_tpot_ms")):
            value = float(r[col])
            out.append(base + [metric, "mean", f"{value:.6g}", args])
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        new = points(csv.DictReader(f), sys.argv[2])
    with open(POINTS, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        kept = [row for row in reader if row[1] != SOURCE]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(kept)
    for i, p in enumerate(new):
        w.writerow([f"p{FIRST_ID + i}"] + p)
    POINTS.write_text(buf.getvalue())
    print(f"{len(new)} points of {SOURCE} written to {POINTS}", file=sys.stderr)


if __name__ == "__main__":
    main()
