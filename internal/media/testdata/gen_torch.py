#!/usr/bin/python3
"""Writes the torch.save fixtures of the image_embeds tests.

Run with Debian's python3 and python3-torch (1.13):
    /usr/bin/python3 internal/media/testdata/gen_torch.py
The tensors are small and seeded; the tests read their shapes only, and
torch_facts.json records what torch itself reports about each file.
"""
import io
import json
import os

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(31)


def save(name, t):
    buf = io.BytesIO()  # a BytesIO names the archive "archive", as vLLM's clients send it
    torch.save(t, buf)
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(buf.getvalue())
    back = torch.load(io.BytesIO(buf.getvalue()), weights_only=True)
    if isinstance(back, torch.Tensor):
        return {"shape": list(back.shape), "dtype": str(back.dtype).removeprefix("torch.")}
    return {"type": type(back).__name__}


facts = {
    "embeds_4x8_f4.pt": save("embeds_4x8_f4.pt", torch.randn(4, 8)),
    "embeds_4x8_f2.pt": save("embeds_4x8_f2.pt", torch.randn(4, 8).half()),
    "embeds_4x8_bf16.pt": save("embeds_4x8_bf16.pt", torch.randn(4, 8).bfloat16()),
    "embeds_3x16_f8.pt": save("embeds_3x16_f8.pt", torch.randn(3, 16, dtype=torch.float64)),
    # A view: offset 8 into a 6x8 storage, transposed strides.
    "embeds_view_5x4_f4.pt": save("embeds_view_5x4_f4.pt", torch.randn(6, 8)[1:, :4]),
    "embeds_T_8x4_f4.pt": save("embeds_T_8x4_f4.pt", torch.randn(4, 8).t()),
    "embeds_2x5x8_f4.pt": save("embeds_2x5x8_f4.pt", torch.randn(2, 5, 8)),
    "embeds_1d_f4.pt": save("embeds_1d_f4.pt", torch.randn(8)),
    # Qwen2.5-VL's dict form, saved whole: a dict, not a tensor.
    "embeds_dict.pt": save("embeds_dict.pt", {"image_embeds": torch.randn(4, 8),
                                              "image_grid_thw": torch.tensor([[1, 4, 4]])}),
    "embeds_int64.pt": save("embeds_int64.pt", torch.arange(12).reshape(3, 4)),
    # Written after the fixtures above, so the seeded draws above stay the same.
    "embeds_16x8_f4.pt": save("embeds_16x8_f4.pt", torch.randn(16, 8)),
    "embeds_1x4x8_f4.pt": save("embeds_1x4x8_f4.pt", torch.randn(1, 4, 8)),
    # An expanded view: 4 rows that are one stored row (stride 0).
    "embeds_expand_4x8_f4.pt": save("embeds_expand_4x8_f4.pt", torch.randn(1, 8).expand(4, 8)),
    # Qwen-VL's image_grid_thw, one image per tensor: (t, h, w) patches.
    "grid_1x4x4.pt": save("grid_1x4x4.pt", torch.tensor([1, 4, 4])),
    "grid_1x8x8.pt": save("grid_1x8x8.pt", torch.tensor([1, 8, 8])),
    "grid_i4_1x4x4.pt": save("grid_i4_1x4x4.pt", torch.tensor([1, 4, 4], dtype=torch.int32)),
    "grid_2x3.pt": save("grid_2x3.pt", torch.tensor([[1, 4, 4], [1, 4, 4]])),
    "grid_f4_1x4x4.pt": save("grid_f4_1x4x4.pt", torch.tensor([1.0, 4.0, 4.0])),
}
with open(os.path.join(HERE, "torch_facts.json"), "w") as f:
    json.dump({"torch": torch.__version__, "files": facts}, f, indent=1, sort_keys=True)
    f.write("\n")
