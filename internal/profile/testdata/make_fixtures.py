#!/usr/bin/python3
"""Regenerates the numpy-made timing-profile fixtures in this folder.

Run with Debian's interpreter (it has python3-numpy):

    /usr/bin/python3 internal/profile/testdata/make_fixtures.py

The output is byte-for-byte reproducible: the archives' member timestamps
are pinned (zipfile would otherwise stamp the current time) and the data is
fixed. CI never runs this script; the generated files are committed and the
Go tests in internal/profile read them.
"""

import json
import os
import types
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# zipfile stamps every member it writes with time.localtime(time.time()).
# Pin it to 1980-01-01 00:00:00 (the earliest ZIP date) so regenerating the
# fixtures gives identical bytes.
_EPOCH_1980 = 315532800
zipfile.time = types.SimpleNamespace(time=lambda: _EPOCH_1980, localtime=time.gmtime)

# The reference profile. decode_itl is 3 x 2 (not square) so that a reader
# which ignores fortran_order would read a visibly different matrix.
PREFILL_ISL = [128, 512, 2048, 8192]
PREFILL_TTFT_MS = [16.9, 24.3, 52.1, 180.7]
DECODE_ACTIVE_KV_TOKENS = [1024, 65536, 1048576]
DECODE_CONTEXT_LENGTH = [128, 4096]
DECODE_ITL = [[6.1, 7.4], [8.2, 9.5], [21.3, 29.8]]

# Whole-number variants for the integer fixtures.
PREFILL_TTFT_MS_INT = [17, 24, 52, 181]
DECODE_ITL_INT = [[6, 7], [8, 10], [21, 30]]


def arrays(dtype="<f8", value_dtype=None, ttft=PREFILL_TTFT_MS, itl=DECODE_ITL):
    value_dtype = value_dtype or dtype
    return {
        "prefill_isl": np.array(PREFILL_ISL, dtype=dtype),
        "prefill_ttft_ms": np.array(ttft, dtype=value_dtype),
        "decode_active_kv_tokens": np.array(DECODE_ACTIVE_KV_TOKENS, dtype=dtype),
        "decode_context_length": np.array(DECODE_CONTEXT_LENGTH, dtype=dtype),
        "decode_itl": np.array(itl, dtype=value_dtype),
    }


def savez(name, members, compressed=False):
    save = np.savez_compressed if compressed else np.savez
    save(os.path.join(HERE, name), **members)


def zip_with_versions(name, members, version):
    """An NPZ whose members use .npy format `version` (np.savez picks 1.0)."""
    path = os.path.join(HERE, name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, arr in members.items():
            with zf.open(key + ".npy", "w") as f:
                np.lib.format.write_array(f, arr, version=version)


def main():
    # Readable profiles.
    extra = dict(arrays(), gpu_batch_sizes=np.array([1, 8, 64]))
    savez("f8_savez.npz", extra)
    savez("f8_savez_compressed.npz", arrays(), compressed=True)
    savez("f4_savez.npz", arrays("<f4"))
    savez("i8_axes_f4_values_compressed.npz", arrays("<i8", "<f4"), compressed=True)
    savez("i8_savez.npz", arrays("<i8", ttft=PREFILL_TTFT_MS_INT, itl=DECODE_ITL_INT))
    savez("i4_savez_compressed.npz", arrays("<i4", ttft=PREFILL_TTFT_MS_INT, itl=DECODE_ITL_INT), compressed=True)
    fortran = arrays()
    fortran["decode_itl"] = np.asfortranarray(fortran["decode_itl"])
    savez("fortran_decode_itl.npz", fortran)
    fortran_f4 = arrays("<f4")
    fortran_f4["decode_itl"] = np.asfortranarray(fortran_f4["decode_itl"])
    savez("fortran_f4_compressed.npz", fortran_f4, compressed=True)
    zip_with_versions("npy_v2.npz", arrays(), (2, 0))
    zip_with_versions("npy_v3.npz", arrays(), (3, 0))
    with open(os.path.join(HERE, "python_json.json"), "w") as f:
        json.dump({k: v.tolist() for k, v in arrays().items()}, f, indent=1)
        f.write("\n")

    # Profiles that must be refused.
    big = arrays(">f8")
    savez("big_endian.npz", big)
    missing = arrays()
    del missing["decode_itl"]
    savez("missing_decode_itl.npz", missing)
    transposed = arrays()
    transposed["decode_itl"] = transposed["decode_itl"].T.copy()
    savez("decode_itl_transposed.npz", transposed)
    flat_itl = arrays()
    flat_itl["decode_itl"] = flat_itl["decode_itl"].ravel()
    savez("decode_itl_1d.npz", flat_itl, compressed=True)
    axis_2d = arrays()
    axis_2d["prefill_isl"] = axis_2d["prefill_isl"].reshape(1, 4)
    savez("prefill_isl_2d.npz", axis_2d)
    nan = arrays()
    nan["prefill_ttft_ms"][2] = np.nan
    savez("nan_prefill_ttft_ms.npz", nan)
    inf = arrays()
    inf["decode_itl"][1, 1] = np.inf
    savez("inf_decode_itl.npz", inf, compressed=True)
    flat = arrays("<i8")
    flat["decode_active_kv_tokens"][1] = 1024
    savez("non_increasing_axis.npz", flat)
    obj = arrays()
    obj["prefill_ttft_ms"] = np.array([16.9, "24.3", None, 180.7], dtype=object)
    savez("object_prefill_ttft_ms.npz", obj)
    f2 = arrays()
    f2["decode_itl"] = f2["decode_itl"].astype("<f2")
    savez("float16_decode_itl.npz", f2)
    # The optional cached-context coefficient (this project's extension):
    # a Python float is saved as a 0-d array, a list as a 1-D one.
    savez("cached_scalar.npz", dict(arrays(), prefill_cached_ms_per_mtok=0.75))
    savez("cached_vector_compressed.npz", dict(arrays(), prefill_cached_ms_per_mtok=np.array([0.75])), compressed=True)
    savez("cached_negative.npz", dict(arrays(), prefill_cached_ms_per_mtok=-0.5))
    savez("cached_two_values.npz", dict(arrays(), prefill_cached_ms_per_mtok=np.array([0.75, 1.0])))
    with open(os.path.join(HERE, "python_json_nan.json"), "w") as f:
        json.dump({k: v.tolist() for k, v in nan.items()}, f)  # writes a bare NaN
        f.write("\n")


if __name__ == "__main__":
    main()
