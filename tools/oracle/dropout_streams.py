#!/usr/bin/python3
"""Records PyTorch's portable-path dropout as the oracle for `lib/attn/nn/dropout.cpp`.

Run with Debian's interpreter, which has python3-torch 1.13.1 (built without MKL, so
`bernoulli_(p)` takes `bernoulli_scalar_kernel_default`: one 64-bit draw per element):

    /usr/bin/python3 tools/oracle/dropout_streams.py [--out data/oracle/dropout]

Each stream seeds the default generator with `torch.manual_seed(seed)` and makes a fixed
sequence of calls: `torch.nn.functional.dropout(x, p, training)` and `torch.rand(n)`. For each
dropout call it records
- the keep-mask (which elements survived), bit-packed: the call is repeated from the same
  generator state on `torch.ones(shape)`, whose kept entries are never zero, so the mask is
  known even where `x` is zero; the script asserts that both runs leave the generator in the
  same state;
- for calls marked `values`, the output itself (float32, every bit), to pin the scaling
  `x * (mask / (1 - p))` and what happens to `inf`, `-inf`, `nan` and `-0.0` inputs.
Every `torch.rand` after a dropout is recorded too: it shows the generator state a dropout
call leaves behind. `draws32_total` (the 32-bit draws the stream made, as predicted from the
kernels' source: 2 per element for a training-mode dropout with 0 < p < 1, else 0; 1 per
element for rand) is checked against `torch.get_rng_state()`.

The dropout input `x` is not random, so the C++ test can build it without a file:
`x[i] = ((i % 2001) - 1000) / 256` as float32 (exact), except `x[1] = inf`, `x[2] = -inf`,
`x[3] = -0.0` and `x[4] = nan` when the tensor has that many elements.

Neither building nor testing the project needs this script or PyTorch: the files it wrote
are committed, and `tests/test_dropout.cpp` reads only them. The MKL path cannot be recorded
here (no MKL in Debian's build, and this machine's CPU is not Intel): notebook 002's
printed outputs pin it instead.
"""

import datetime
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from oracle_common import arguments, debian_version, empty_npy_folder, mt_part, write_json

SCRIPT = "tools/oracle/dropout_streams.py"


def numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def pattern(shape):
    """The dropout input: exact float32 values with a few special ones at the front."""
    n = numel(shape)
    i = np.arange(n, dtype=np.int64)
    x = (((i % 2001) - 1000) / 256.0).astype(np.float32)
    specials = [np.inf, -np.inf, -0.0, np.nan]
    for k, v in enumerate(specials, start=1):
        if k < n:
            x[k] = np.float32(v)
    return torch.from_numpy(x.reshape(shape))


def dropout(p, shape, train=True, values=False):
    return {"op": "dropout", "p": p, "shape": shape, "training": train, "values": values}


def rand(n):
    return {"op": "rand", "shape": [n]}


def draws_of(op):
    if op["op"] == "rand":
        return numel(op["shape"])
    n = numel(op["shape"])
    if not op["training"] or op["p"] == 0 or op["p"] == 1 or n == 0:
        return 0
    return 2 * n          # portable path: one random64() per element


def streams():
    out = []

    def add(name, seed, ops, note=""):
        out.append({"name": name, "seed": seed, "ops": ops, "note": note})

    # The grid: several seeds and probabilities, 10 000 elements per call, two calls in a row
    # (the second starts where the first left the generator), then rand.
    shapes = {0: [10000], 123: [100, 100], 789: [4, 50, 50]}
    for seed, shape in shapes.items():
        for p in (0.1, 0.2, 0.5, 0.9):
            tag = str(p).replace(".", "d")
            add(f"grid_p{tag}_s{seed}", seed,
                [dropout(p, shape, values=(seed == 123)), dropout(p, shape), rand(64)])

    # Probabilities whose 1 / (1 - p) is not exact, and extremes.
    add("odd_p_s42", 42,
        [dropout(p, [2000], values=True) for p in (1 / 3, 0.05, 0.7, 0.999, 1e-6, 0.25)]
        + [rand(16)],
        "1 - p is rounded to float32 before the kept entries are scaled")

    # Cases that draw nothing, between calls that do.
    add("edge_s123", 123,
        [dropout(0.0, [6, 6], values=True), rand(8),
         dropout(0.5, [6, 6], train=False, values=True), rand(8),
         dropout(1.0, [6, 6], values=True), rand(8),
         dropout(0.5, [0], values=True), rand(8),
         dropout(0.5, [6, 6], values=True), rand(8)],
        "p = 0, evaluation mode, p = 1 and an empty tensor draw nothing; p = 1 returns "
        "x * 0 (NaN for inf and nan inputs)")

    # Notebook 004 In [51] is the fourth dropout of a 6x6 matrix after torch.manual_seed(123).
    add("fourth_6x6_s123", 123,
        [dropout(0.5, [6, 6], values=True) for _ in range(4)] + [rand(8)],
        "004 In [51]: the fourth call's mask is the one the notebook printed")

    # Dropout interleaved with rand, small and odd shapes.
    add("interleave_s789", 789,
        [rand(5), dropout(0.2, [3, 7], values=True), rand(5), dropout(0.5, [1], values=True),
         rand(5), dropout(0.5, [2, 2, 6, 6], values=True), rand(5),
         dropout(0.1, [7], values=True), rand(5)])
    return out


def run_dropout(op):
    shape = op["shape"]
    x = pattern(shape)
    state = torch.get_rng_state()
    y = F.dropout(x, op["p"], op["training"])
    after = torch.get_rng_state()
    torch.set_rng_state(state)
    kept = F.dropout(torch.ones(shape), op["p"], op["training"]) != 0
    assert mt_part(torch.get_rng_state()) == mt_part(after), "mask re-run drew differently"
    return y.contiguous().reshape(-1).numpy(), kept.contiguous().reshape(-1).numpy()


def record_stream(stream, out_dir):
    seed = stream["seed"]
    torch.manual_seed(seed)
    masks, values, rands = [], [], []
    draws = 0
    python = [f"torch.manual_seed({seed})"]
    for op in stream["ops"]:
        if op["op"] == "rand":
            rands.append(torch.rand(*op["shape"]).numpy())
            python.append(f"torch.rand({op['shape'][0]})")
        else:
            y, kept = run_dropout(op)
            masks.append(kept.astype(np.uint8))
            if op["values"]:
                values.append(y.astype(np.float32))
            shape = ", ".join(str(s) for s in op["shape"])
            python.append(f"F.dropout(x({shape}), {op['p']!r}, training={op['training']})")
        draws += draws_of(op)

    # The predicted draw count, checked against PyTorch's own generator state.
    g = torch.Generator()
    g.manual_seed(seed)
    if draws:
        torch.rand(draws, generator=g)
    assert mt_part(g.get_state()) == mt_part(torch.get_rng_state()), \
        f"{stream['name']}: PyTorch did not make exactly {draws} 32-bit draws"

    files = {}
    name = stream["name"]
    bits = np.concatenate(masks) if masks else np.zeros(0, np.uint8)
    files["mask"] = f"{name}_mask.npy"
    np.save(os.path.join(out_dir, files["mask"]), np.packbits(bits, bitorder="little"),
            allow_pickle=False)
    if values:
        files["values"] = f"{name}_values.npy"
        np.save(os.path.join(out_dir, files["values"]), np.concatenate(values), allow_pickle=False)
    if rands:
        files["rand"] = f"{name}_rand.npy"
        np.save(os.path.join(out_dir, files["rand"]),
                np.concatenate(rands).astype(np.float32), allow_pickle=False)
    entry = {
        "name": name,
        "seed": seed,
        "python": "; ".join(python),
        "ops": stream["ops"],
        "files": files,
        "mask_bits": int(bits.size),
        "draws32_total": draws,
    }
    if stream["note"]:
        entry["note"] = stream["note"]
    return entry


def main():
    args = arguments(__doc__, "dropout")
    empty_npy_folder(args.out)

    assert not torch.backends.mkl.is_available(), \
        "this PyTorch has MKL: on an Intel CPU its dropout would take the MKL path"
    torch.set_num_threads(1)
    entries = [record_stream(s, args.out) for s in streams()]

    # The scale PyTorch applies to kept entries, for each probability used: the kept output
    # of dropout(ones) (noise.div_(1 - p) in _dropout_impl), with its exact bits.
    scales = {}
    for p in sorted({op["p"] for s in streams() for op in s["ops"]
                     if op["op"] == "dropout" and 0 < op["p"] < 1}):
        torch.manual_seed(0)
        y = F.dropout(torch.ones(100000), p, True)
        kept = y[y != 0]
        assert kept.numel() > 0 and bool((kept == kept[0]).all())
        scales[repr(p)] = float(kept[0])

    manifest = {
        "produced_by": SCRIPT,
        "command": f"/usr/bin/python3 {SCRIPT}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__,
        "debian_package": f"python3-torch {debian_version()}",
        "torch_mkl": torch.backends.mkl.is_available(),
        "numpy_version": np.__version__,
        "python_version": sys.version.split()[0],
        "format": ("Each stream: torch.manual_seed(seed), then its ops in order. `dropout` is "
                   "torch.nn.functional.dropout(x, p, training) on the pattern x described in "
                   "`input`; `rand` is torch.rand(n). `<name>_mask.npy`: uint8, the keep-masks "
                   "of all dropout calls (row-major, concatenated in call order, mask_bits "
                   "bits) packed with numpy.packbits(bitorder='little'). `<name>_values.npy`: "
                   "float32 outputs of the dropout calls with values=true, concatenated. "
                   "`<name>_rand.npy`: float32 outputs of the rand calls, concatenated. "
                   "draws32_total was checked against torch.get_rng_state()."),
        "input": ("x[i] = float32(((i % 2001) - 1000) / 256) in row-major order, except "
                  "x[1] = inf, x[2] = -inf, x[3] = -0.0, x[4] = nan where they exist"),
        "scale_float32": scales,
        "streams": entries,
    }
    write_json(os.path.join(args.out, "manifest.json"), manifest)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {len(entries)} streams, {total / 1e3:.0f} kB, to {args.out}")


if __name__ == "__main__":
    main()
