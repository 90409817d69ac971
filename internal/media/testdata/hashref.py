#!/usr/bin/python3
"""An independent Python implementation of vLLM's multimodal hash for an
image loaded from bytes (MediaWithBytes), written from the layout described
in docs/multimodal.md, used to produce hash_vectors.json. NumPy gives the
scalar encodings (np.array(x).tobytes()), hashlib gives sha256/sha512 and
b3sum (Debian's b3sum package) gives blake3, so none of the Go code is used.
Run: ./hashref.py > hash_vectors.json"""
import hashlib, json, subprocess, sys
import numpy as np

def scalar(v):
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode()
    return np.array(v).tobytes()  # bool, int (int64) and float (float64)

def keyed(key, v):
    # iter_item_to_bytes in the unframed layout: containers flatten into
    # dotted keys, a leaf is its key followed by its bytes.
    if v is None:
        yield key.encode()
    elif isinstance(v, list):
        for i, e in enumerate(v):
            yield from keyed(f"{key}.{i}", e)
    elif isinstance(v, dict):
        for k, e in v.items():
            yield from keyed(f"{key}.{k}", e)
    else:
        yield key.encode()
        yield scalar(v)

def framed_chunk(b):
    yield len(b).to_bytes(8, "little")
    yield b

def framed_value(v):
    if v is None:
        yield b"\x00"
    elif isinstance(v, list):
        yield b"\x01" + len(v).to_bytes(8, "little")
        for e in v:
            yield from framed_value(e)
    elif isinstance(v, dict):
        yield b"\x02" + len(v).to_bytes(8, "little")
        for k, e in v.items():
            yield from framed_chunk(k.encode())
            yield from framed_value(e)
    else:
        yield b"\x03"
        yield from framed_chunk(scalar(v))

def framed(key, v):
    yield from framed_chunk(key.encode())
    yield from framed_value(v)

class Image:  # stands for MediaWithBytes(PIL image, original bytes)
    def __init__(self, data):
        self.data = data

def stream(scheme, **kwargs):
    item = keyed if scheme == "keyed" else framed
    for k, v in sorted(kwargs.items()):
        if isinstance(v, Image):
            # The wrapper's serialize_item is iter_item_to_bytes("image", bytes).
            if scheme == "keyed":
                yield k.encode()
            else:
                yield from framed_chunk(k.encode())
                yield b"\x03"
            yield from item("image", v.data)
        else:
            yield from item(k, v)

def digest(alg, chunks):
    data = b"".join(chunks)
    if alg == "blake3":
        out = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True, check=True)
        return out.stdout.decode().strip()
    return hashlib.new(alg, data).hexdigest()

cases = []
for fixture, model, kwargs in [
    ("rgb_97x61.png", "Qwen/Qwen2.5-VL-7B-Instruct", None),
    ("rgb_97x61.png", "/models/qwen2.5-vl", None),
    ("baseline_121x80.jpg", "Qwen/Qwen2.5-VL-7B-Instruct", None),
    ("lossy_77x41.webp", "google/gemma-3-4b-it", {"max_pixels": 1003520, "fps": 2.0, "do_pan_and_scan": True, "tag": "x", "sizes": [1, 2]}),
    ("anim_32x24.gif", "m", {"videos_kwargs": {"fps": 1}, "images_kwargs": {"min_pixels": 3136, "crop": None}, "n": -7}),
]:
    data = open(fixture, "rb").read()
    for scheme in ("keyed", "framed"):
        for alg in ("blake3", "sha256", "sha512"):
            kw = {"model_id": model, "image": Image(data)}
            if kwargs:
                # The other modalities' kwargs groups stay out of an image's hash.
                kw["mm_processor_kwargs"] = {k: v for k, v in kwargs.items() if k not in ("videos_kwargs", "audio_kwargs")}
            cases.append({"fixture": fixture, "model_id": model, "mm_processor_kwargs": kwargs,
                          "scheme": scheme, "algorithm": alg, "hash": digest(alg, stream(scheme, **kw))})
json.dump(cases, sys.stdout, indent=1)
print()
