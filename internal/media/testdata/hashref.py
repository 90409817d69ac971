#!/usr/bin/python3
"""An independent Python implementation of vLLM's multimodal hash for an
image loaded from bytes (MediaWithBytes), written from the layout described
in docs/multimodal.md, used to produce hash_vectors.json. NumPy gives the
scalar encodings (np.array(x).tobytes()), hashlib gives sha256/sha512 and
b3sum (Debian's b3sum package) gives blake3, so none of the Go code is used.
Run: ./hashref.py > hash_vectors.json

With the argument "tensors" it prints tensor_hash_vectors.json instead:
embeddings items (image_embeds, audio_embeds, Qwen-VL's dict form) loaded
with Debian's python3-torch as vLLM's ImageEmbeddingMediaIO loads them
(torch.load(weights_only=True).to_dense(), or torch.from_numpy(np.load))
and serialized as vLLM's MultiModalHasher.serialize_item serializes a
torch.Tensor and an np.ndarray (vllm/multimodal/hasher.py, the keyed layout
and the framed one of vllm-project/vllm#54283).
Run: ./hashref.py tensors > tensor_hash_vectors.json"""
import hashlib, io, json, subprocess, sys
import numpy as np

class Ndarray:  # np.ndarray as serialize_item writes it
    def __init__(self, a):
        # C-contiguous: the array's own buffer; otherwise a C-order copy.
        data = bytes(a.view(np.uint8).data) if a.flags.c_contiguous else a.tobytes()
        self.value = {"dtype": a.dtype.str, "shape": a.shape, "data": data}

class Tensor:  # torch.Tensor as serialize_item writes it
    def __init__(self, t):
        import torch
        t = t.cpu()
        if t.dtype == torch.bfloat16:  # NumPy has no bfloat16: its bytes as uint8
            u8 = t.contiguous().view((t.numel(),)).view(torch.uint8)
            self.value = {"original_dtype": str(t.dtype), "original_shape": tuple(t.shape),
                          "data": Ndarray(u8.numpy())}
        else:
            self.value = Ndarray(t.numpy())

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
    elif isinstance(v, (list, tuple)):
        for i, e in enumerate(v):
            yield from keyed(f"{key}.{i}", e)
    elif isinstance(v, dict):
        for k, e in v.items():
            yield from keyed(f"{key}.{k}", e)
    elif isinstance(v, Tensor):
        yield key.encode()
        yield from keyed("tensor", v.value)
    elif isinstance(v, Ndarray):
        yield key.encode()
        yield from keyed("ndarray", v.value)
    else:
        yield key.encode()
        yield scalar(v)

def framed_chunk(b):
    yield len(b).to_bytes(8, "little")
    yield b

def framed_value(v):
    if v is None:
        yield b"\x00"
    elif isinstance(v, (list, tuple)):
        yield b"\x01" + len(v).to_bytes(8, "little")
        for e in v:
            yield from framed_value(e)
    elif isinstance(v, dict):
        yield b"\x02" + len(v).to_bytes(8, "little")
        for k, e in v.items():
            yield from framed_chunk(k.encode())
            yield from framed_value(e)
    elif isinstance(v, Tensor):
        yield b"\x03"
        yield from framed("tensor", v.value)
    elif isinstance(v, Ndarray):
        yield b"\x03"
        yield from framed("ndarray", v.value)
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

def load(name):
    """The tensor vLLM's ImageEmbeddingMediaIO.load_bytes makes of a file."""
    import torch
    data = open(name, "rb").read()
    if data[:6] == b"\x93NUMPY":
        return torch.from_numpy(np.load(io.BytesIO(data)))
    return torch.load(io.BytesIO(data), weights_only=True).to_dense()

def tensor_cases():
    import torch
    cases = []
    single = [("image", f, None, "Qwen/Qwen2.5-VL-7B-Instruct") for f in (
        "embeds_4x8_f4.pt", "embeds_4x8_f2.pt", "embeds_4x8_bf16.pt", "embeds_3x16_f8.pt",
        "embeds_view_5x4_f4.pt", "embeds_T_8x4_f4.pt", "embeds_16x8_f4.pt", "embeds_77x16_f4.npy")]
    # A (1, tokens, hidden) tensor: vLLM's one-item batch, hashed as t[0].
    single.append(("image", "embeds_1x4x8_f4.pt", 0, "Qwen/Qwen2.5-VL-7B-Instruct"))
    single.append(("audio", "embeds_4x8_f4.pt", None, "Qwen/Qwen2-Audio-7B-Instruct"))
    single.append(("audio", "embeds_4x8_bf16.pt", None, "Qwen/Qwen2-Audio-7B-Instruct"))
    for modality, fixture, index, model in single:
        t = load(fixture)
        if index is not None:
            t = t[index]
        for scheme in ("keyed", "framed"):
            for alg in ("blake3", "sha256") if fixture == "embeds_4x8_bf16.pt" else ("blake3",):
                kw = {"model_id": model, modality: Tensor(t)}
                cases.append({"modality": modality, "fixture": fixture, "index": index, "grid": None,
                              "model_id": model, "scheme": scheme, "algorithm": alg,
                              "hash": digest(alg, stream(scheme, **kw))})
    # Qwen-VL's dict form through the chat parser: the embeddings rows are
    # concatenated (a flat field) and sliced per image by t*h*w/merge^2, the
    # grid stacked (a batched field) and indexed; the item is the mapping of
    # the two (in the order the mock hashes: image_embeds first).
    for fixture, grid in (("embeds_4x8_f4.pt", "grid_1x4x4.pt"), ("embeds_16x8_f4.pt", "grid_1x8x8.pt"),
                          ("embeds_4x8_bf16.pt", "grid_i4_1x4x4.pt")):
        e, g = load(fixture), load(grid)
        n = int(g.prod()) // 4
        item = {"image_embeds": Tensor(torch.cat([e])[0:n]), "image_grid_thw": Tensor(torch.stack([g])[0])}
        model = "Qwen/Qwen2.5-VL-7B-Instruct"
        for scheme in ("keyed", "framed"):
            kw = {"model_id": model, "image": item}
            cases.append({"modality": "image", "fixture": fixture, "index": None, "grid": grid,
                          "model_id": model, "scheme": scheme, "algorithm": "blake3",
                          "hash": digest("blake3", stream(scheme, **kw))})
    return cases

if sys.argv[1:] == ["tensors"]:
    json.dump(tensor_cases(), sys.stdout, indent=1)
    print()
    sys.exit(0)

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
