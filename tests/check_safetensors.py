#!/usr/bin/python3
"""Reads with Python and PyTorch the safetensors files the library writes: the reverse of tests/test_safetensors.cpp.

    tests/check_safetensors.py UNIT_TESTS     (meson test: test_safetensors_python)

The `safetensors` package is not part of Debian, so `load_file` below reads a file by hand from
the format's specification (struct, json, torch.frombuffer), refusing anything the reference
reader would refuse and checking that the file is laid out as the reference writer lays it out
(header padded with spaces to a multiple of 8 bytes, tensors ordered by dtype alignment then
name, one after another from byte 0 to the end). It runs the unit test program's hidden case
"write files for tests/check_safetensors.py", which trains a small GPTModel two AdamW steps and
writes the model, the optimizer, the model's logits in eval mode and the model after one more
step; then, with Raschka's classes (his chapter 5 previous_chapters.py, data/sources/raschka/):
- `model.load_state_dict(load_file("model.safetensors"))` into his GPTModel (strict), whose logits
  are the library's bit for bit;
- the optimizer's file turned into `torch.optim.AdamW.load_state_dict`'s form (state by parameter
  index, `step` a 0-d float32 tensor as PyTorch 1.13 keeps it, the hyperparameters from the
  metadata), and one training step in PyTorch from there (manual_seed(5)) gives the library's
  parameters after its own step, bit for bit.
Skipped (exit status 77) when /usr/bin/python3 has no torch (apt-get install python3-torch).
Run it on Debian's reference BLAS (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas), as meson does."""

import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"test_safetensors_python: skipped: {e} (apt-get install python3-torch python3-numpy)")
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "oracle"))
from his_code import RASCHKA, install_tiktoken, load_module  # noqa: E402

ALIGNMENT = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32",
             "F64", "I64", "U64"]
TORCH_DTYPE = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64}
SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I64": 8}


def load_file(path):
    """(tensors, metadata) of a safetensors file, checked as the reference checks it and as its writer lays it out."""
    data = open(path, "rb").read()
    assert len(data) >= 8, f"{path}: shorter than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), f"{path}: header length {n}"
    raw = data[8:8 + n]
    assert n % 8 == 0, f"{path}: the header ({n} bytes) is not padded to a multiple of 8"
    text = raw.decode("utf-8")
    assert text.startswith("{") and text.rstrip(" ").endswith("}") and len(text) - len(text.rstrip(" ")) < 8, \
        f"{path}: the header is not one object padded with fewer than 8 spaces"
    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    keys = [k for k, _ in pairs]
    assert len(keys) == len(set(keys)), f"{path}: a key twice"
    header = dict(pairs)
    metadata = dict(header.pop("__metadata__", []))
    assert all(isinstance(v, str) for v in metadata.values())
    if metadata:
        assert keys[0] == "__metadata__", f"{path}: __metadata__ is not first"
    names = [k for k in keys if k != "__metadata__"]
    expected_order = sorted(names, key=lambda k: (-ALIGNMENT.index(dict(header[k])["dtype"]), k.encode()))
    assert names == expected_order, f"{path}: tensors not in the writer's order"
    buffer = data[8 + n:]
    tensors, at = {}, 0
    for name in names:
        info = dict(header[name])
        assert list(info) == ["dtype", "shape", "data_offsets"], f"{path}: {name}: fields {list(info)}"
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64)) if info["shape"] else 1
        assert begin == at and end - begin == count * SIZE[info["dtype"]], f"{path}: {name}: offsets {begin, end}"
        at = end
        t = torch.frombuffer(bytearray(buffer[begin:end]), dtype=TORCH_DTYPE[info["dtype"]]) if end > begin \
            else torch.zeros(0, dtype=TORCH_DTYPE[info["dtype"]])
        tensors[name] = t.reshape(info["shape"])
    assert at == len(buffer), f"{path}: {len(buffer) - at} bytes after the last tensor"
    return tensors, metadata


def same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.view(torch.int32), b.view(torch.int32))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check_safetensors.py UNIT_TESTS")
    torch.set_num_threads(1)
    oracle = json.load(open(os.path.join(ROOT, "data", "oracle", "safetensors", "files.json")))
    gpt = oracle["files"]["gpt_small.safetensors"]
    install_tiktoken()
    pc = load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, ATTN_SAFETENSORS_OUT=out)
        env.setdefault("ATTN_DATA_DIR", os.path.join(ROOT, "data"))
        subprocess.run([sys.argv[1], "[safetensors_for_python]"], env=env, check=True, stdout=subprocess.DEVNULL)

        tensors, metadata = load_file(os.path.join(out, "model.safetensors"))
        check(metadata == {"format": "pt"}, "model.safetensors: metadata {'format': 'pt'}")
        torch.manual_seed(1)
        model = pc.GPTModel(gpt["config"])
        check(sorted(tensors) == sorted(model.state_dict()), "model.safetensors: his GPTModel's state_dict keys")
        result = model.load_state_dict(tensors)  # strict, as a reader would load it
        check(not result.missing_keys and not result.unexpected_keys, "his model.load_state_dict(load_file(path))")
        model.eval()
        ids = torch.tensor(gpt["ids"])
        with torch.no_grad():
            logits = model(ids)
        theirs, _ = load_file(os.path.join(out, "logits.safetensors"))
        check(same_bits(logits, theirs["logits"]), "his model's logits are the library's, bit for bit")

        state, groups = load_file(os.path.join(out, "optimizer.safetensors"))
        check(groups["optimizer"] == "AdamW" and groups["amsgrad"] == "False", "optimizer.safetensors: metadata")
        names = [name for name, _ in model.named_parameters()]
        check(sorted(state) == sorted(f"state.{n}.{part}" for n in names for part in ("step", "exp_avg", "exp_avg_sq")),
              "optimizer.safetensors: step, exp_avg, exp_avg_sq of every parameter")
        check(all(state[f"state.{n}.step"].shape == () and state[f"state.{n}.step"].item() == 2.0 for n in names),
              "optimizer.safetensors: every step a 0-d float32 tensor holding 2.0")
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.5)
        optimizer.load_state_dict({
            "state": {i: {part: state[f"state.{n}.{part}"] for part in ("step", "exp_avg", "exp_avg_sq")}
                      for i, n in enumerate(names)},
            "param_groups": [{"lr": float(groups["lr"]), "betas": (float(groups["beta1"]), float(groups["beta2"])),
                              "eps": float(groups["eps"]), "weight_decay": float(groups["weight_decay"]),
                              "amsgrad": False, "maximize": False, "foreach": None, "capturable": False,
                              "params": list(range(len(names)))}]})
        targets = torch.roll(ids, -1, dims=1)
        model.train()
        torch.manual_seed(5)
        optimizer.zero_grad()
        logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        optimizer.step()
        after, _ = load_file(os.path.join(out, "after_step.safetensors"))
        differing = [k for k, v in model.state_dict().items() if not same_bits(v, after[k])]
        check(not differing, "a PyTorch AdamW step from the loaded files is the library's step, bit for bit"
              + (f" (differ: {differing})" if differing else ""))
    if failures:
        sys.exit(f"test_safetensors_python: {len(failures)} check(s) failed")
    print("test_safetensors_python: every check passed")


if __name__ == "__main__":
    main()
