#!/usr/bin/python3
"""Records PyTorch's CPU random streams as the oracle for `lib/attn/core/generator.cpp`.

Run with Debian's interpreter, which has python3-torch 1.13.1 and NumPy:

    /usr/bin/python3 tools/oracle/generator_streams.py [--out data/oracle/generator]

For every stream it seeds the default generator with `torch.manual_seed(seed)`, makes a
fixed sequence of calls (`torch.rand`, `uniform_`, `torch.randint`, `torch.randn`,
`normal_`, `nn.Linear`, `nn.Parameter(torch.rand(...))`) and saves what they returned as
`.npy` files (float32 or int64, so every bit is kept). `manifest.json` describes each stream
twice: as the literal Python that produced it (`python`) and as a machine-readable list of
steps that `tests/test_generator.cpp` replays through the C++ library.

Besides the values, the manifest records what PyTorch's generator looks like after each
stream, read from `torch.get_rng_state()`:
- `draws32_total`: how many 32-bit MT19937 outputs the stream consumed. The count predicted
  from the kernels' source is checked here against PyTorch's own state (the state after the
  stream must equal a fresh generator advanced by exactly that many draws), so the number is
  PyTorch's, not this script's guess;
- `normal_cached_after` / `normal_cached_value`: the double Box-Muller sample cached by the
  scalar `normal_` path (`next_double_normal_sample`), with its exact bits.

Neither building nor testing the project needs this script or PyTorch: the files it wrote
are committed, and the tests read only them.
"""

import datetime
import math
import os
import struct
import sys

import numpy as np
import torch
from oracle_common import (MT_BYTES, arguments, cpu_capability, debian_version, empty_npy_folder, mt_part,
                           write_json)

SCRIPT = "tools/oracle/generator_streams.py"

# Layout of torch.get_rng_state() for the CPU generator (CPUGeneratorImplState, x86-64):
# uint64 the_initial_seed, int left, int seeded, uint64 next, uint64 state[624],
# double normal_x, double normal_y, double normal_rho, int normal_is_valid, (pad),
# float next_float_normal_sample, bool is_next_float_normal_sample_valid, (pad).
NORMAL_OFFSET = MT_BYTES                   # normal_x, normal_y, normal_rho, normal_is_valid
STATE_BYTES = 5056


def cached_normal(state):
    """(valid, value) of the cached double normal sample in a CPU RNG state."""
    b = state.numpy().tobytes()
    _x, y, _rho, valid = struct.unpack_from("<dddi", b, NORMAL_OFFSET)
    return bool(valid), y


def numel(shape):
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def shape_args(shape):
    """A shape as positional arguments: `torch.rand(3, 2)`."""
    return ", ".join(str(s) for s in shape)


def shape_tuple(shape):
    """A shape as a tuple literal: `torch.randint(0, 7, (3,))`."""
    return "(" + shape_args(shape) + ("," if len(shape) == 1 else "") + ")"


# ----------------------------------------------------------------------------------------------
# Ops: each knows how to run itself in PyTorch, how to print itself as Python, and how many
# 32-bit draws the kernels in aten/src/ATen/native/cpu/DistributionTemplates.h make for it.
# ----------------------------------------------------------------------------------------------

class DrawCounter:
    """Predicts 32-bit draws; tracks the scalar normal path's cached second sample."""

    def __init__(self):
        self.draws = 0
        self.cached = False

    def op(self, op):
        kind = op["op"]
        if kind in ("rand", "uniform"):
            self.draws += numel(op["shape"])          # one random() per element
        elif kind == "randint":
            n = numel(op["shape"])
            rng = op["high"] - op["low"]
            self.draws += n * (2 if rng >= 2**32 else 1)   # random64() when range >= 2^32
        elif kind in ("randn", "normal"):
            n = numel(op["shape"])
            if n >= 16:                               # normal_fill: n uniforms (+16 redrawn)
                self.draws += n + (16 if n % 16 else 0)
            else:                                     # normal_distribution<double>
                for _ in range(n):
                    if self.cached:
                        self.cached = False
                    else:
                        self.draws += 4               # two random64() per Box-Muller pair
                        self.cached = True
        elif kind == "linear":
            self.draws += op["in"] * op["out"] + (op["out"] if op["bias"] else 0)
        elif kind == "rand_parameter":
            self.draws += op["d_in"] * op["d_out"]
        else:
            raise ValueError(kind)


def run_op(op):
    """Runs one op on the default generator; returns the arrays it produced, in draw order."""
    kind = op["op"]
    if kind == "rand":
        return [torch.rand(*op["shape"])]
    if kind == "uniform":
        return [torch.empty(*op["shape"]).uniform_(op["from"], op["to"])]
    if kind == "randint":
        return [torch.randint(op["low"], op["high"], tuple(op["shape"]))]
    if kind == "randn":
        return [torch.randn(*op["shape"])]
    if kind == "normal":
        return [torch.empty(*op["shape"]).normal_(op["mean"], op["std"])]
    if kind == "linear":
        layer = torch.nn.Linear(op["in"], op["out"], bias=op["bias"])
        out = [layer.weight.detach()]
        if op["bias"]:
            out.append(layer.bias.detach())
        return out
    if kind == "rand_parameter":
        return [torch.nn.Parameter(torch.rand(op["d_in"], op["d_out"])).detach()]
    raise ValueError(kind)


def op_py(op):
    """The literal PyTorch call for an op."""
    kind = op["op"]
    if kind == "rand":
        return f"torch.rand({shape_args(op['shape'])})"
    if kind == "uniform":
        return f"torch.empty({shape_args(op['shape'])}).uniform_({op['from']!r}, {op['to']!r})"
    if kind == "randint":
        return f"torch.randint({op['low']}, {op['high']}, {shape_tuple(op['shape'])})"
    if kind == "randn":
        return f"torch.randn({shape_args(op['shape'])})"
    if kind == "normal":
        return f"torch.empty({shape_args(op['shape'])}).normal_({op['mean']!r}, {op['std']!r})"
    if kind == "linear":
        return f"torch.nn.Linear({op['in']}, {op['out']}, bias={op['bias']})"
    if kind == "rand_parameter":
        return f"torch.nn.Parameter(torch.rand({op['d_in']}, {op['d_out']}))"
    raise ValueError(kind)


def op_dtype(op):
    return "int64" if op["op"] == "randint" else "float32"


# ----------------------------------------------------------------------------------------------
# The streams
# ----------------------------------------------------------------------------------------------

SEEDS = [0, 123, 789, 2**32 + 5]


def step(calls, repeat=1, trace_cache=False):
    st = {"repeat": repeat, "calls": calls}
    if trace_cache:
        st["trace_cache"] = True
    return st


def streams():
    out = []

    def add(name, seed, steps, note=""):
        out.append({"name": name, "seed": seed, "steps": steps, "note": note})

    # torch.rand: one 32-bit draw per element.
    for s in SEEDS:
        add(f"rand_s{s}", s, [step([{"op": "rand", "shape": [10000]}])],
            "2**32 + 5 seeds exactly like 5: only the low 32 bits reach MT19937"
            if s >= 2**32 else "")

    # uniform_(from, to): float32 arithmetic x * (to - from) + from.
    bounds = [(-1 / math.sqrt(768), 1 / math.sqrt(768)), (-3.0, 3.0), (-2.0, 5.0)]
    for lo, hi in bounds:
        for s in SEEDS[:3]:
            tag = f"{lo:+.4g}_{hi:+.4g}".replace("+", "p").replace("-", "m").replace(".", "d")
            add(f"uniform_{tag}_s{s}", s,
                [step([{"op": "uniform", "from": lo, "to": hi, "shape": [10000]}])])

    # randint(low, high): low + r % (high - low).
    for v in (100, 50257, 7):
        for s in SEEDS[:3]:
            add(f"randint_0_{v}_s{s}", s,
                [step([{"op": "randint", "low": 0, "high": v, "shape": [10000]}])])
    add("randint_m5_5_s123", 123,
        [step([{"op": "randint", "low": -5, "high": 5, "shape": [2000]}])],
        "negative low")
    add("randint_0_2p40_s123", 123,
        [step([{"op": "randint", "low": 0, "high": 2**40, "shape": [2000]}])],
        "range >= 2**32: one 64-bit draw per element")

    # randn with >= 16 elements: normal_fill (AVX2 in Debian's build), ragged tail redrawn.
    for n in (10007, 10000):
        for s in SEEDS[:3]:
            add(f"randn_{n}_s{s}", s, [step([{"op": "randn", "shape": [n]}])])
    add("randn_vec_sizes_s123", 123,
        [step([{"op": "randn", "shape": [n]} for n in (16, 17, 31, 32, 33, 47, 100)]),
         step([{"op": "randn", "shape": [4, 5]}, {"op": "randn", "shape": [2, 3, 4]}]),
         step([{"op": "normal", "mean": 0.5, "std": 2.0, "shape": [10000]}]),
         step([{"op": "normal", "mean": -1.25, "std": 0.1, "shape": [1009]}])],
        "sizes around the 16-element blocks; normal_(mean, std) on the vector path")

    # randn with < 16 elements: double Box-Muller, second sample cached across calls.
    small = [{"op": "randn", "shape": [15]}, {"op": "randn", "shape": [3]},
             {"op": "randn", "shape": [1]},
             {"op": "normal", "mean": 2.5, "std": 0.5, "shape": [7]},
             {"op": "normal", "mean": -1.0, "std": 3.0, "shape": [2, 2]},
             {"op": "normal", "mean": 0.1, "std": 0.0, "shape": [1]}]
    for s in SEEDS[:3]:
        add(f"randn_small_s{s}", s, [step(small, repeat=700, trace_cache=True)],
            "700 rounds of small calls: the cached second sample crosses call boundaries; "
            "the cache trace holds the cached double after every call (NaN: none)")
    add("randn_small_then_vec_s789", 789,
        [step([{"op": "randn", "shape": [5]}]),
         step([{"op": "randn", "shape": [20]}]),
         step([{"op": "randn", "shape": [1]}])],
        "the vector path neither uses nor clears the cached scalar sample")

    # nn.Linear: weight [out, in] then bias [out], each uniform_(-bound, bound).
    add("linear_3x2_nobias_x3_s789", 789,
        [step([{"op": "linear", "in": 3, "out": 2, "bias": False}], repeat=3)],
        "three Linear(3, 2, bias=False) built in a row (W_query, W_key, W_value)")
    add("linear_768x100_s123", 123,
        [step([{"op": "linear", "in": 768, "out": 100, "bias": True}])])
    add("linear_mixed_s0", 0,
        [step([{"op": "linear", "in": 64, "out": 160, "bias": True},
               {"op": "linear", "in": 160, "out": 64, "bias": False},
               {"op": "linear", "in": 7, "out": 5, "bias": True}])])

    # nn.Parameter(torch.rand(3, 2)) x3 (SelfAttention_v1).
    add("rand_parameter_3x2_x3_s123", 123,
        [step([{"op": "rand_parameter", "d_in": 3, "d_out": 2}], repeat=3)])

    # Interleaving: state continues across different kinds of calls.
    add("interleave_s123", 123,
        [step([{"op": "rand", "shape": [1000]}]),
         step([{"op": "randn", "shape": [20]}]),
         step([{"op": "randint", "low": 0, "high": 50257, "shape": [500]}]),
         step([{"op": "randn", "shape": [3]}]),
         step([{"op": "rand", "shape": [1000]}]),
         step([{"op": "randn", "shape": [1]}]),
         step([{"op": "uniform", "from": -0.5, "to": 0.5, "shape": [10, 10]}])],
        "rand, randn(20), randint, randn(3) (caches one), rand, randn(1) (uses the cache), "
        "uniform_")
    return out


# ----------------------------------------------------------------------------------------------

def record_stream(stream, out_dir):
    seed = stream["seed"]
    torch.manual_seed(seed)
    counter = DrawCounter()
    steps_out = []
    python = [f"torch.manual_seed({seed})"]
    for i, st in enumerate(stream["steps"]):
        dtypes = {op_dtype(op) for op in st["calls"]}
        assert len(dtypes) == 1, "one dtype per step file"
        dtype = dtypes.pop()
        arrays = []
        trace = []   # the cached double normal sample after each call (NaN when none)
        for _ in range(st["repeat"]):
            for op in st["calls"]:
                arrays += [t.contiguous().reshape(-1).numpy() for t in run_op(op)]
                counter.op(op)
                if st.get("trace_cache"):
                    valid, value = cached_normal(torch.get_rng_state())
                    assert valid == counter.cached
                    trace.append(value if valid else math.nan)
        data = np.concatenate(arrays).astype(np.int64 if dtype == "int64" else np.float32)
        fname = f"{stream['name']}_{i}.npy" if len(stream["steps"]) > 1 else f"{stream['name']}.npy"
        np.save(os.path.join(out_dir, fname), data, allow_pickle=False)
        calls = "; ".join(op_py(op) for op in st["calls"])
        py = calls if st["repeat"] == 1 else f"for _ in range({st['repeat']}): {calls}"
        python.append(py)
        entry = {"repeat": st["repeat"], "calls": st["calls"], "python": py,
                 "file": fname, "dtype": dtype, "shape": list(data.shape)}
        if st.get("trace_cache"):
            # float64: the cached sample is a double (r * sin(theta) before mean/std), so this
            # pins the scalar path's double arithmetic, which the float32 outputs cannot.
            cname = fname[:-4] + "_cache.npy"
            np.save(os.path.join(out_dir, cname), np.array(trace, dtype=np.float64),
                    allow_pickle=False)
            entry["cache_trace_file"] = cname
            entry["cache_trace_dtype"] = "float64"
        steps_out.append(entry)

    # What PyTorch's generator holds now, and a check of the predicted draw count.
    state = torch.get_rng_state()
    valid, value = cached_normal(state)
    assert valid == counter.cached, f"{stream['name']}: cached-sample prediction is wrong"
    g = torch.Generator()
    g.manual_seed(seed)
    if counter.draws:
        torch.rand(counter.draws, generator=g)    # torch.rand makes one 32-bit draw per element
    assert mt_part(g.get_state()) == mt_part(state), \
        f"{stream['name']}: PyTorch did not make exactly {counter.draws} 32-bit draws"

    entry = {
        "name": stream["name"],
        "seed": seed,
        "python": "; ".join(python),
        "steps": steps_out,
        "draws32_total": counter.draws,
        "normal_cached_after": valid,
    }
    if valid:
        entry["normal_cached_value"] = value
        entry["normal_cached_value_hex"] = value.hex()
    if stream["note"]:
        entry["note"] = stream["note"]
    return entry


def main():
    args = arguments(__doc__, "generator")
    empty_npy_folder(args.out)

    torch.set_num_threads(1)
    entries = [record_stream(s, args.out) for s in streams()]

    # Fact the C++ side relies on: seeds are reduced to their low 32 bits.
    torch.manual_seed(5)
    a = torch.rand(1000)
    torch.manual_seed(2**32 + 5)
    b = torch.rand(1000)
    assert torch.equal(a, b)

    manifest = {
        "produced_by": SCRIPT,
        "command": f"/usr/bin/python3 {SCRIPT}",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__,
        "debian_package": f"python3-torch {debian_version()}",
        "numpy_version": np.__version__,
        "python_version": sys.version.split()[0],
        "cpu_capability": cpu_capability(),
        "format": ("Each stream: torch.manual_seed(seed), then its steps in order. A step runs "
                   "its calls `repeat` times; its file holds every returned tensor flattened "
                   "(row-major) and concatenated in call order (Linear: weight then bias). "
                   "float32 or int64 .npy, little-endian. draws32_total was checked against "
                   "torch.get_rng_state(); normal_cached_* is the cached double Box-Muller "
                   "sample after the stream; a step's cache_trace_file (float64) holds that "
                   "cached sample after each call, NaN when there is none."),
        "facts_checked": ["torch.manual_seed(2**32 + 5) gives the same stream as "
                          "torch.manual_seed(5)"],
        "streams": entries,
    }
    write_json(os.path.join(args.out, "manifest.json"), manifest)
    total = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"wrote {len(entries)} streams, {total / 1e6:.2f} MB, to {args.out}")


if __name__ == "__main__":
    main()
