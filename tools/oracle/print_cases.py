#!/usr/bin/python3
"""Records how PyTorch and NumPy print edge-case tensors, for tests/test_print.cpp.

Run with Debian's interpreter (python3-torch 1.13, python3-numpy 1.24):

    /usr/bin/python3 tools/oracle/print_cases.py

It writes data/oracle/print_cases.json: for each case the dtype, shape and exact values
(float32 as uint32 bit patterns, int64/bool as integers), the torch print options used, and
the expected strings:

* ``torch``: ``repr(t)`` of a plain tensor (no autograd, so no ``grad_fn=`` suffix);
* ``numpy`` (float32 only): ``str(t.numpy())`` with NumPy's default print options.

It also records how a Jupyter cell displays tuples of such reprs (``repr_tuple``): the
item strings are handed to IPython's pretty printer (``IPython.lib.pretty.pretty``, max width
79) inside objects whose ``__repr__`` returns them, which is how IPython prints a tensor or a
``torch.Size`` (both have their own ``__repr__``). Debian's interpreter has no IPython, so
the script asks the first other ``python3`` on PATH that has it (or ``$IPYTHON_PYTHON``);
without one, the tuple cases are left out.
"""

import datetime
import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import torch
from book_inputs import BATCH, INPUTS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "data", "oracle", "print_cases.json")

DEFAULTS = dict(precision=4, linewidth=80, threshold=1000, edgeitems=3, sci_mode=None)

cases = []
names = set()


def f32(values):
    return torch.tensor(values, dtype=torch.float32)


def from_bits(bits, shape):
    arr = np.array(bits, dtype=np.uint32).view(np.float32).reshape(shape)
    return torch.from_numpy(arr.copy())


def add(name, t, **opts):
    """Records one case: t printed with torch options `opts` (others at their defaults)."""
    assert name not in names, name
    names.add(name)
    assert not t.requires_grad
    options = dict(DEFAULTS)
    options.update(opts)
    torch.set_printoptions(
        precision=options["precision"],
        linewidth=options["linewidth"],
        threshold=options["threshold"],
        edgeitems=options["edgeitems"],
        sci_mode=options["sci_mode"],
    )
    try:
        torch_str = repr(t)
    finally:
        torch.set_printoptions(profile="default", sci_mode=None)
    assert "grad_fn" not in torch_str
    case = {"name": name, "shape": list(t.shape)}
    if t.dtype == torch.float32:
        case["dtype"] = "float32"
        case["bits"] = t.contiguous().numpy().view(np.uint32).ravel().tolist()
    elif t.dtype == torch.int64:
        case["dtype"] = "int64"
        case["values"] = t.reshape(-1).tolist()
    elif t.dtype == torch.bool:
        case["dtype"] = "bool"
        case["values"] = [int(v) for v in t.reshape(-1).tolist()]
    else:
        raise TypeError(t.dtype)
    case["options"] = options
    case["torch"] = torch_str
    if t.dtype == torch.float32:
        case["numpy"] = str(t.numpy())
    cases.append(case)


rng = np.random.default_rng(20240613)


def randn(*shape, scale=1.0):
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def uniform(*shape, low=0.0, high=1.0):
    return torch.from_numpy(rng.uniform(low, high, shape).astype(np.float32))


inf, nan = math.inf, math.nan

# --- the book's own inputs (notebooks 002 and 004; book_inputs.py) -------------------------
add("book_inputs", INPUTS)
add("book_inputs_batch", BATCH)
add("book_mask_simple", torch.tril(torch.ones(6, 6)))
add("book_mask_triu", torch.triu(torch.ones(6, 6), diagonal=1))
add("book_mask_bool", torch.triu(torch.ones(6, 6), diagonal=1).bool())
add("book_tokens", torch.tensor([95, 11, 75, 30, 31]))
add("book_token_ids", torch.tensor([2, 2, 2, 2, 2, 2, 1, 13264, 5509]))
add("book_attention_mask", torch.tensor([[0, 0, 0, 0, 0, 0, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1, 1, 1]]))
scores = torch.from_numpy(rng.uniform(0.0, 0.5, (6, 6)).astype(np.float32))
add("masked_scores_neginf", scores.masked_fill(torch.triu(torch.ones(6, 6), 1).bool(), -inf))
add("masked_scores_neginf_p2", scores.masked_fill(torch.triu(torch.ones(6, 6), 1).bool(), -inf),
    precision=2, linewidth=200)
add("masked_weights_zero", torch.softmax(
    scores.masked_fill(torch.triu(torch.ones(6, 6), 1).bool(), -inf), dim=-1))

# --- signed zeros ---------------------------------------------------------------------------
add("neg_zero_scalar", f32(-0.0))
add("pos_zero_scalar", f32(0.0))
add("neg_zero_1d", f32([-0.0]))
add("neg_zeros_1d", f32([-0.0, -0.0, 0.0]))
add("neg_zero_among_fixed", f32([-0.0, 0.0, 1.5, -2.25, 0.125]))
add("neg_zero_among_int", f32([-0.0, 1.0, 2.0, -3.0]))
add("neg_zero_among_sci", f32([-0.0, 1e-5, 2.5, -0.0]))
add("zeros_2d", torch.zeros(3, 4))
add("zeros_3d", torch.zeros(2, 2, 3))
add("neg_zero_2d", f32([[-0.0, 0.3], [0.25, -0.0]]))

# --- infinities and NaN ---------------------------------------------------------------------
add("neginf_all_2d", torch.full((2, 3), -inf))
add("inf_all_1d", f32([inf, inf]))
add("neginf_row", f32([[0.5, -inf, -inf], [-inf, -inf, -inf], [0.25, 0.125, -inf]]))
add("neginf_row_int", f32([[1.0, -inf, -inf], [-inf, -inf, -inf], [2.0, 3.0, -inf]]))
add("mixed_inf_nan", f32([1.5, inf, -inf, nan, -2.75]))
add("nan_only", f32([nan, nan]))
add("neg_nan_bits", from_bits([0xFFC00000, 0x7FC00000, 0x3F800000], [3]))
add("neg_nan_scalar", from_bits([0xFFC00000], []))
add("nan_scalar", f32(nan))
add("inf_scalar", f32(inf))
add("neginf_scalar", f32(-inf))
add("nan_int_mode", f32([1.0, nan, 2.0, -inf]))
add("inf_sci", f32([1e-6, inf, -inf, nan, 3.0]))
add("inf_big_values", f32([[123.456, -inf], [0.5, 987.25]]))
add("nan_zero", f32([0.0, nan, -0.0]))

# --- scientific mode ------------------------------------------------------------------------
add("sci_ratio", f32([1.0, 2000.5, 3.25]))
add("sci_tiny", f32([1e-5, 0.5, -0.25]))
add("sci_large", f32([1.5e9, 2.0, -3.5]))
add("sci_ratio_edge_below", f32([1.0, 1000.0, 0.5]))
add("sci_ratio_2d", f32([[1e-3, 2.0], [3.0, 4.5]]))
add("small_1e4_edge", f32([1e-4, 0.5]))
add("very_small", f32([1e-30, 3e-38, 1e-45, -2.5e-40]))
add("very_large", f32([3.4e38, -1e38, 1.0e20]))
add("sci_mixed_exponents", f32([1.0e-12, 5.0e10, -7.25e-3, 1.0]))
add("sci_forced_on", f32([0.5, 1.25, 2.0]), sci_mode=True)
add("sci_forced_off", f32([1e-5, -1e-5, 2.5e3]), sci_mode=False)
add("sci_forced_on_int", f32([1.0, 2.0, 30.0]), sci_mode=True)
add("sci_forced_off_int_big", f32([1e9, 2.0]), sci_mode=False)
add("sci_random_2d", randn(4, 5, scale=1e-5))
add("sci_random_3d", randn(2, 3, 4, scale=1e5))
add("sci_precision2", randn(3, 4, scale=1e-6), precision=2)
add("sci_precision6", randn(3, 4, scale=1e6), precision=6)

# --- integer-valued float tensors -----------------------------------------------------------
add("int_mode_small", f32([1.0, 2.0, 300.0, -4.0]))
add("int_mode_ratio_sci", f32([1.0, 5000.0]))
add("int_mode_large_sci", f32([1e9, 2.0, -3.0]))
add("int_mode_1e8", f32([1e8, 1.0e8 + 8.0]))
add("int_mode_2d", torch.arange(12, dtype=torch.float32).reshape(3, 4))
add("int_mode_negative", f32([[-1.0, 2.0], [30.0, -400.0]]))
add("ones_2x3", torch.ones(2, 3))
add("int_mode_scalar", f32(4.0))
add("int_mode_big_scalar", f32(123456789.0))

# --- 0-d scalars ----------------------------------------------------------------------------
add("scalar_4_54_p2", f32(4.54), precision=2)
add("scalar_4_54", f32(4.54))
add("scalar_small", f32(1e-5))
add("scalar_negative", f32(-0.123456))
add("scalar_large", f32(3.0e10))
add("scalar_third", f32(1.0 / 3.0), precision=6)
add("scalar_loss", f32(4.6532), precision=2)

# --- ranks 1 to 4 ---------------------------------------------------------------------------
add("rand_1d", randn(7))
add("rand_2d", randn(4, 5))
add("rand_3d", randn(2, 6, 3))
add("rand_4d", randn(2, 2, 3, 4))
add("rand_4d_p2", randn(2, 3, 2, 4), precision=2)
add("rand_uniform_2d", uniform(6, 6))
add("rand_5d", randn(2, 1, 2, 2, 2))
add("rand_rows_1", randn(1, 1, 4))
add("rounding_carry", f32([0.99995, 9.99995, -0.99996, 0.00015, 99.99996]))
add("rounding_carry_p2", f32([0.995, 9.996, -0.999, 0.105]), precision=2)

# --- summarised (> 1000 elements) -----------------------------------------------------------
add("summ_1d", randn(2000))
add("summ_1d_int_mode", torch.arange(1500, dtype=torch.float32))
add("summ_2d_notebook001", randn(5, 768) * 0.7, precision=2, linewidth=200)
add("summ_2d_tall", randn(400, 4))
add("summ_2d_both", randn(40, 40))
add("summ_3d", randn(12, 10, 10))
add("summ_3d_inner", randn(4, 20, 30))
add("summ_4d", randn(3, 4, 10, 10))
big_outside = randn(40, 40)
big_outside[20, 20] = 1.0e6  # not in the summarised corners: does not reach the formatter
big_outside[0, 0] = -0.0
add("summ_hidden_large", big_outside)
add("summ_1d_p6_lw40", randn(1100), precision=6, linewidth=40)
add("summ_int64", torch.arange(2000))
add("summ_bool", torch.from_numpy(rng.uniform(size=(30, 40)) < 0.5))

# --- line widths ----------------------------------------------------------------------------
add("long_row_1d", randn(50))
add("long_rows_2d", randn(3, 30))
add("long_rows_3d", randn(2, 2, 25))
add("lw20", randn(12), linewidth=20)
add("lw40", randn(3, 10), linewidth=40)
add("lw40_3d", randn(2, 3, 7), linewidth=40)
add("lw5_narrow", f32([1.5, 2.5, 3.5]), linewidth=5)
add("lw200", randn(4, 25), linewidth=200)
add("lw20_int64", torch.arange(20) * 37, linewidth=20)

# --- precisions -----------------------------------------------------------------------------
add("precision2", randn(3, 5), precision=2)
add("precision6", randn(3, 5), precision=6)
add("precision0", f32([0.5, 1.5, 2.5, -0.4]), precision=0)
add("precision2_lw200", randn(5, 5), precision=2, linewidth=200)
add("precision8", randn(2, 3), precision=8)

# --- bool and int64 -------------------------------------------------------------------------
add("bool_1d", torch.tensor([True, False, True]))
add("bool_all_true", torch.ones(2, 3, dtype=torch.bool))
add("bool_3d", torch.tril(torch.ones(2, 4, 4)).bool())
add("bool_scalar", torch.tensor(True))
add("bool_scalar_false", torch.tensor(False))
add("int64_negative", torch.tensor([-5, 12, 0, -123456]))
add("int64_2d", torch.tensor([[1, -2, 3], [400, 5, -60]]))
add("int64_scalar", torch.tensor(42))
add("int64_argmax", torch.tensor([0, 66, 81, 43, 87]))
add("int64_big", torch.tensor([2**62, -(2**62), 7]))
add("int64_3d", torch.arange(24).reshape(2, 3, 4))

# --- empty tensors --------------------------------------------------------------------------
add("empty_1d", torch.zeros(0))
add("empty_2d", torch.zeros(0, 3))
add("empty_3d", torch.zeros(2, 0, 4))
add("empty_int64", torch.zeros(0, dtype=torch.int64))
add("empty_int64_2d", torch.zeros(3, 0, dtype=torch.int64))
add("empty_bool", torch.zeros(0, dtype=torch.bool))

# --- NumPy-focused cases (dragon4, padding, exponent mode) ----------------------------------
add("np_min_digits", f32([1e-5, 1.23456789e-5, 2.0e-3]))
add("np_exp_one_digit", f32([1e-5, 1e5]))
add("np_big_ints_positional", f32([33554436.0, 40000000.0, 16777217.0, 99999992.0]))
add("np_shortest_9_digits", f32([0.1, 0.2, 0.3, 1.0 / 3.0, 2.0 / 3.0, 16777215.0]))
add("np_cut_at_8", f32([0.123456704, 1.000000119, 3.14159274, 0.001234567]))
add("np_dropout_like", f32([[0.0, 0.89664394, 0.0], [0.75993437, 0.619427, 0.6206385]]))
add("np_exp_boundary", f32([1e8, 1.0]))
add("np_below_exp_boundary", f32([99999992.0, 100000.0]))
add("np_nonfinite_only", f32([nan, -inf]))
add("np_inf_only", f32([inf]))
add("np_nan_exp", f32([nan, 1e-7, 1.0]))
add("np_wide_exp", f32([1e-38, 1e38, -1e-45]))
add("np_random_exp_1d", torch.from_numpy(
    (rng.choice([-1.0, 1.0], 200) * 10.0 ** rng.uniform(-40, 38, 200)).astype(np.float32)))
add("np_random_bits", torch.from_numpy(
    rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32).view(np.float32).copy()))
add("np_random_positional", torch.from_numpy(
    (rng.uniform(0.5, 400.0, 300) * rng.choice([-1.0, 1.0], 300)).astype(np.float32)))
add("np_random_small_pos", torch.from_numpy(rng.uniform(1e-4, 0.1, 200).astype(np.float32)))
add("np_min_edge_1e4", f32([1e-4, 2e-4]))
add("np_min_edge_1e4_alone", f32([1e-4]))
# max/min is a float32 division in NumPy (rounds to exactly 1000 here) and a double one in
# torch (1000.0000177 > 1000): NumPy stays positional, torch switches to scientific.
add("ratio_float32_rounding", f32([9.504686, 9504.687]))
add("np_halves", f32([0.5, 0.25, 0.125, 1.0 / 1024.0, 3.0]))
add("np_large_positional", f32([1234567.9, 7654321.5, 9999.999]))
for i, v in enumerate([1e-5, 1.5, 100.0, 1e16, 1.0000001e16, 9.999999e15, 123456.789,
                        3.4028235e38, 1.4e-45, 1.0e-4, 0.99999994, 2.0**24 + 2.0]):
    add(f"np_scalar_{i}", f32(v))

# --- tuple displays (IPython's pretty printer) ----------------------------------------------
torch.set_printoptions(profile="default", sci_mode=None)
_size = lambda *dims: repr(torch.Size(dims))
_mask = repr(torch.tril(torch.ones(6, 6)))
_3d = repr(BATCH)
TUPLES = [
    ("mask_and_size", [_mask, _size(6, 6)]),
    ("tokens_and_size", [repr(torch.tensor([95, 11, 75, 30, 31])), _size(5)]),
    ("argmax_and_sizes", [repr(torch.tensor([0, 66, 81, 43, 87])), _size(5, 100), _size(5)]),
    ("size_then_matrix", [_size(6, 3), repr(INPUTS)]),
    ("single_multi_single", [_size(6), _mask, _size(6, 6)]),
    ("one_tuple_single", [_size(5)]),
    ("one_tuple_multi", [_mask]),
    ("empty_tuple", []),
    ("three_d_blank_lines", [_3d, _size(2, 6, 3)]),
    ("two_matrices", [repr(INPUTS), repr(torch.triu(torch.ones(3, 3)).bool())]),
    ("exactly_79", ["a" * 37, "b" * 38]),
    ("exactly_80", ["a" * 37, "b" * 39]),
    ("long_single_lines", [repr(torch.arange(20)), _size(20)]),
    ("many_short_items", [_size(i, i + 1) for i in range(1, 8)]),
    ("long_first_item", ["x" * 100, "y"]),
    ("grad_fn_suffix_line", [
        "tensor([[0.2899,   -inf],\n        [0.4656, 0.1723]],\n       grad_fn=<MaskedFillBackward0>)",
        _size(2, 2)]),
]

_PRETTY = r"""
import json, sys
import IPython
from IPython.lib.pretty import pretty
class Repr:
    def __init__(self, text):
        self.text = text
    def __repr__(self):
        return self.text
items = json.load(sys.stdin)
json.dump({"ipython": IPython.__version__,
           "python": sys.version.split()[0],
           "displays": [pretty(tuple(Repr(s) for s in t)) for t in items]}, sys.stdout)
"""


def ipython_displays(item_lists):
    """Runs _PRETTY in the first interpreter that has IPython (this one, $IPYTHON_PYTHON,
    then each other python3 on PATH); None when there is none."""
    candidates = [c for c in [os.environ.get("IPYTHON_PYTHON")] if c]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        exe = os.path.join(d, "python3")
        if os.access(exe, os.X_OK) and os.path.realpath(exe) != os.path.realpath(sys.executable):
            candidates.append(exe)
    for exe in [sys.executable] + candidates:
        proc = subprocess.run([exe, "-c", _PRETTY], input=json.dumps(item_lists),
                              capture_output=True, text=True)
        if proc.returncode == 0:
            result = json.loads(proc.stdout)
            result["interpreter"] = exe
            return result
    return None


tuple_cases = []
_displays = ipython_displays([items for _, items in TUPLES])
if _displays is None:
    print("warning: no python3 with IPython found; tuple cases left out", file=sys.stderr)
else:
    for (name, items), shown in zip(TUPLES, _displays["displays"]):
        tuple_cases.append({"name": name, "items": items, "ipython": shown})

provenance = {
    "script": "tools/oracle/print_cases.py",
    "python": platform.python_version(),
    "torch": torch.__version__,
    "numpy": np.__version__,
    "date": datetime.date.today().isoformat(),
    "torch_expected": "repr(tensor) with the case's torch.set_printoptions",
    "numpy_expected": "str(tensor.numpy()) with NumPy's default print options",
    "float32_values": "IEEE-754 bit patterns as unsigned 32-bit integers, row-major",
}
if _displays is not None:
    provenance["ipython"] = _displays["ipython"]
    provenance["ipython_python"] = _displays["python"]
    provenance["tuples_expected"] = ("IPython.lib.pretty.pretty(tuple of objects whose __repr__ "
                                     "returns the items)")

os.makedirs(os.path.dirname(OUT), exist_ok=True)

def case_json(case):
    """One case as indented JSON with its shape and value list each on a single line."""
    inline = ("shape", "bits", "values")
    head = {k: v for k, v in case.items() if k not in inline}
    text = json.dumps(head, indent=2)[:-2]
    for key in inline:
        if key in case:
            text += ',\n  "' + key + '": ' + json.dumps(case[key])
    return text + "\n}"


with open(OUT, "w") as fh:
    fh.write('{\n"provenance": ' + json.dumps(provenance, indent=2) + ',\n"cases": [\n')
    fh.write(",\n".join(case_json(c) for c in cases))
    fh.write('\n],\n"tuples": ')
    fh.write(json.dumps(tuple_cases, indent=1))
    fh.write("\n}\n")
print(f"wrote {len(cases)} cases and {len(tuple_cases)} tuples to {OUT} ({os.path.getsize(OUT)} bytes)", file=sys.stderr)
