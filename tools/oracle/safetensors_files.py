#!/usr/bin/python3
"""Writes safetensors files by hand, from the format's specification, for the library's reader to read.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/safetensors_files.py

The `safetensors` package is not part of Debian, so the files are written here with struct and json
as its `serialize` (safetensors/src/tensor.rs, behind `safetensors.torch.save_file`) writes them:
8 bytes of little-endian header length; the header as compact JSON (`__metadata__` first, then the
tensors ordered by dtype alignment, largest first, then by name), padded with spaces to a multiple
of 8 bytes; then each tensor's bytes (little-endian, row-major) in that order. It writes, into
data/oracle/safetensors/:
- `dtypes.safetensors`: F32, F16, BF16 and I64 tensors holding the values a converter gets wrong
  (signed zeros, infinities, quiet and signalling NaNs with payloads, F16 subnormals, the largest
  and smallest normals), a 0-d and an empty tensor, and two metadata keys;
- `gpt_small.safetensors`: the `state_dict()` of his GPTModel (chapter 4, from his chapter 5
  previous_chapters.py, data/sources/raschka/, commit b969b3e) for a small config after
  torch.manual_seed(123), with `{"format": "pt"}` as metadata (what `save_model` writes);
- `files.json`: what the files hold, as PyTorch sees it: each tensor's dtype, shape and the bits of
  `t.float()` (float32, as uint32) or its int64 values as decimal strings; the metadata; his
  model's config, its `state_dict()` keys in order and, in eval mode, its logits (bits) for a
  batch of ids.
"""

import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, install_tiktoken, load_module  # noqa: E402
from oracle_common import arguments, provenance, write_json  # noqa: E402

SCRIPT = "tools/oracle/safetensors_files.py"
# The format's dtypes in the reference's order of alignment (tensor.rs `Dtype`, smallest first);
# the writer sorts by it, largest first, then by name.
ALIGNMENT = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
             "F64", "I64", "U64"]
DTYPE = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}
SMALL_CONFIG = {"vocab_size": 23, "context_length": 6, "emb_dim": 8, "n_heads": 2, "n_layers": 2,
                "drop_rate": 0.1, "qkv_bias": True}


def raw_bytes(t):
    """The tensor's elements, little-endian, row-major (16-bit floats through their int16 view)."""
    t = t.detach().contiguous()
    if t.dtype in (torch.float16, torch.bfloat16):
        return t.view(torch.int16).numpy().astype("<i2").tobytes()
    return t.numpy().astype(t.numpy().dtype.newbyteorder("<")).tobytes()


def serialize(tensors, metadata=None):
    """The bytes of a safetensors file of `tensors` (name -> tensor), as the reference writes them."""
    order = sorted(tensors, key=lambda name: (-ALIGNMENT.index(DTYPE[tensors[name].dtype]), name.encode()))
    header, data, offset = {}, b"", 0
    if metadata:
        header["__metadata__"] = metadata
    for name in order:
        b = raw_bytes(tensors[name])
        header[name] = {"dtype": DTYPE[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(b)]}
        data += b
        offset += len(b)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def from_bits(bits, dtype):
    """A 1-D tensor of `dtype` from its elements' bit patterns."""
    if dtype == torch.float32:
        return torch.tensor(np.array(bits, dtype=np.uint32).view(np.int32)).view(torch.float32)
    return torch.tensor(np.array(bits, dtype=np.uint16).view(np.int16)).view(dtype)


def describe(t):
    """What a reader must get: dtype, shape, and float32 bits of t.float() or int64 values."""
    out = {"dtype": DTYPE[t.dtype], "shape": list(t.shape)}
    if t.dtype == torch.int64:
        out["values"] = [str(v) for v in t.reshape(-1).tolist()]
    else:
        out["float32_bits"] = t.float().reshape(-1).numpy().view(np.uint32).tolist()
    return out


def dtype_tensors():
    f32 = from_bits([0x3F800000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FA00001,
                     0x00000001, 0x7F7FFFFF, 0x3EAAAAAB], torch.float32).reshape(3, 3)
    # F16: 0, -0, 1, -2.5, 65504, smallest normal, smallest and largest subnormal, -subnormal,
    # inf, -inf, quiet NaN, signalling NaN with a payload, -NaN.
    f16 = from_bits([0x0000, 0x8000, 0x3C00, 0xC100, 0x7BFF, 0x0400, 0x0001, 0x03FF, 0x8155, 0x7C00, 0xFC00,
                     0x7E00, 0x7C01, 0xFE00, 0x3555, 0x1234], torch.float16).reshape(2, 2, 4)
    # BF16: 0, -0, 1, -1.5, the largest, smallest normal and subnormal, inf, -inf, NaN, a signalling
    # NaN with a payload, 1/3.
    bf16 = from_bits([0x0000, 0x8000, 0x3F80, 0xBFC0, 0x7F7F, 0x0080, 0x0001, 0x7F80, 0xFF80, 0x7FC0,
                      0x7F81, 0x3EAB], torch.bfloat16).reshape(3, 4)
    i64 = torch.tensor([0, -1, 2 ** 62 + 1, -2 ** 63, 2 ** 63 - 1], dtype=torch.int64)
    return {"weights.f32": f32, "weights.f16": f16, "weights.bf16": bf16, "ids": i64,
            "scalar": torch.tensor(42.5), "empty": torch.zeros(0, 3)}


def main():
    args = arguments(__doc__, "safetensors")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    doc = {**provenance(SCRIPT, commit="b969b3ef7aac466cbbf9f3479c773e07d897c482"),
           "format": "for each file: its tensors as PyTorch holds them (dtype, shape, the bits of t.float() as "
                     "uint32, row-major; int64 values as decimal strings) and its metadata",
           "files": {}}

    tensors = dtype_tensors()
    metadata = {"format": "pt", "written_by": SCRIPT}
    with open(os.path.join(args.out, "dtypes.safetensors"), "wb") as f:
        f.write(serialize(tensors, metadata))
    doc["files"]["dtypes.safetensors"] = {"tensors": {k: describe(v) for k, v in tensors.items()},
                                          "metadata": metadata}

    install_tiktoken()  # previous_chapters.py imports tiktoken (not used here)
    pc = load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))
    torch.manual_seed(123)
    model = pc.GPTModel(SMALL_CONFIG)
    model.eval()
    sd = model.state_dict()
    with open(os.path.join(args.out, "gpt_small.safetensors"), "wb") as f:
        f.write(serialize(dict(sd), {"format": "pt"}))
    ids = torch.tensor([[1, 5, 22, 0, 7, 3], [9, 9, 2, 14, 21, 6]])
    with torch.no_grad():
        logits = model(ids)
    doc["files"]["gpt_small.safetensors"] = {
        "python": "torch.manual_seed(123); model = GPTModel(config); model.eval(); model.state_dict()",
        "config": SMALL_CONFIG, "metadata": {"format": "pt"}, "state_dict_keys": list(sd.keys()),
        "tensors": {k: describe(v) for k, v in sd.items()},
        "ids": ids.tolist(), "logits_shape": list(logits.shape),
        "logits_bits": logits.reshape(-1).numpy().view(np.uint32).tolist()}
    write_json(os.path.join(args.out, "files.json"), doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
