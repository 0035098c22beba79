#!/usr/bin/python3
"""Oracle for chapter 10 (notebook 001: one causal attention head all the way to a loss).

Run with Debian's interpreter (python3-torch 1.13, python3-numpy 1.24):

    /usr/bin/python3 tools/oracle/ch10_print_cases.py

It writes three JSON files under data/oracle/ch10/ that tests/test_loss.cpp reads (the tests
never run torch). Float32 values are stored as IEEE-754 bit patterns (unsigned 32-bit
integers, row-major) so that no digit is lost; every printed string is `repr(tensor)` of a
tensor without autograd (so without `grad_fn=`), under
`torch.set_printoptions(precision=2, linewidth=200)` as notebook 001 In [1] sets them.

* ``print_cases.json``: tensors shaped like notebook 001's outputs and edge cases of the
  precision-2 / linewidth-200 printer (summarisation with `...`, -inf, nan, rounding at the
  second decimal, scientific mode, integer mode), each with its exact values and PyTorch's
  string.
* ``pipeline.json``: notebook 001 run from top to bottom after ``torch.manual_seed(SEED)``
  (the notebook itself is unseeded): token ids, the embedded rows, the raw scores, the
  weights, the context vectors, the logits, the argmax, the losses (targets = arange(T), one
  target = -1, all targets = -1) and the printed string of every step. Torch 1.13 has no
  ``scaled_dot_product_attention``, so that step is not recorded. Also: a few values of the
  embedding table (to check ``nn.Embedding``'s ``normal_`` initialisation) and the
  exception PyTorch raises for an out-of-range target.
* ``cross_entropy.json``: ``F.cross_entropy`` on crafted logits and targets (ignore_index,
  all ignored, large logits, a batch long enough for the cascade sum of ``nll_loss``).
* the fragile mask of notebook 001 In [10] (``masked_fill(tril(s) == 0, -inf)``) on crafted
  queries and keys whose scores contain a genuine 0 below the diagonal, next to the boolean
  mask, is recorded in ``print_cases.json`` under the names ``fragile_*``.
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
from torch import nn
import torch.nn.functional as F
from oracle_common import cpu_capability  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT_DIR = os.path.join(ROOT, "data", "oracle", "ch10")
SCRIPT = "tools/oracle/ch10_print_cases.py"
SEED = 123
PRINT = dict(precision=2, linewidth=200)


def set_print():
    torch.set_printoptions(**PRINT)


def reset_print():
    torch.set_printoptions(profile="default", sci_mode=None)


def bits(t):
    return t.detach().contiguous().numpy().astype(np.float32).view(np.uint32).ravel().tolist()


def describe(t):
    """Exact values of a tensor (float32 as bits; int64/bool as integers)."""
    t = t.detach()
    d = {"shape": list(t.shape)}
    if t.dtype == torch.float32:
        d["dtype"] = "float32"
        d["bits"] = bits(t)
    elif t.dtype == torch.int64:
        d["dtype"] = "int64"
        d["values"] = t.reshape(-1).tolist()
    elif t.dtype == torch.bool:
        d["dtype"] = "bool"
        d["values"] = [int(v) for v in t.reshape(-1).tolist()]
    else:
        raise TypeError(t.dtype)
    return d


def printed(t):
    set_print()
    try:
        s = repr(t.detach())
    finally:
        reset_print()
    assert "grad_fn" not in s
    return s


def debian_package():
    try:
        return "python3-torch " + subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "python3-torch"],
            capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def provenance(what):
    return {
        "script": SCRIPT,
        "command": "/usr/bin/python3 " + SCRIPT,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "debian_package": debian_package(),
        "torch_cpu_capability": cpu_capability(),
        "torch_num_threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "date": datetime.date.today().isoformat(),
        "print_options": "torch.set_printoptions(precision=2, linewidth=200)",
        "float32_values": "IEEE-754 bit patterns as unsigned 32-bit integers, row-major",
        "what": what,
    }


def write(name, obj):
    os.makedirs(OUT_DIR, exist_ok=True)
    path = os.path.join(OUT_DIR, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")
    print("wrote", os.path.relpath(path, ROOT), file=sys.stderr)


inf, nan = math.inf, math.nan


def f32(values):
    return torch.tensor(values, dtype=torch.float32)


# ------------------------------------------------------------------------------ print cases
cases = []


def add(name, t, python, recipe=None):
    """Records one case. With `recipe`, the values are not stored but described by how to
    remake them bit for bit from PyTorch's generator (the tests replay it through the C++
    generator and check `bits_sum` first)."""
    assert all(c["name"] != name for c in cases), name
    case = {"name": name, "python": python}
    if recipe is None:
        case.update(describe(t))
    else:
        case.update({"shape": list(t.shape), "dtype": "float32", "recipe": recipe,
                     "bits_sum": int(sum(bits(t)))})
    case["torch"] = printed(t)
    cases.append(case)


rng = np.random.default_rng(1001)


def randn(*shape, scale=1.0):
    return torch.from_numpy((rng.standard_normal(shape) * scale).astype(np.float32))


def from_rand(seed, shape, scale, sets=()):
    """(torch.rand(shape) - 0.5) * scale after manual_seed(seed), then single elements set
    (flat index, value). Subtracting 0.5 is exact; the product is rounded once."""
    g = torch.Generator().manual_seed(seed)
    t = (torch.rand(shape, generator=g) - 0.5) * torch.tensor(scale, dtype=torch.float32)
    flat = t.view(-1)
    for i, value in sets:
        flat[i] = value
    recipe = {"op": "(rand(shape) - 0.5) * scale, then set", "seed": seed, "shape": list(shape),
              "scale_bits": bits(torch.tensor(scale, dtype=torch.float32))[0],
              "set": [[i, str(value)] for i, value in sets]}
    return t, recipe


def add_rand(name, python, seed, shape, scale, sets=()):
    t, recipe = from_rand(seed, shape, scale, sets)
    add(name, t, python, recipe)


add_rand("ctx_5x768", "notebook 001 In [12]-like context vectors in [-0.8, 0.8)", 1, (5, 768), 1.6)
add_rand("ctx_5x768_wide", "[5, 768] with values up to 150 (wider columns)", 2, (5, 768), 300.0)
add_rand("ctx_5x768_sci", "[5, 768] of small values: scientific mode", 3, (5, 768), 2e-4)
add_rand("ctx_5x768_nonfinite", "[5, 768] with a -inf in a printed column and a nan", 4, (5, 768),
         1.6, sets=((768, -inf), (3 * 768 - 1, nan)))
add_rand("ctx_5x768_hidden_large",
         "[5, 768]: a large value in a hidden (summarised) column still sets the format", 5,
         (5, 768), 1.6, sets=((3 * 768 + 400, 12345.0),))
add_rand("ctx_5x768_hidden_neg",
         "[5, 768]: a hidden -10 widens every column by one character", 6,
         (5, 768), 1.6, sets=((2 * 768 + 100, -10.0),))
add("logits_5x100", randn(5, 100, scale=0.3), "[5, 100] logits: 500 elements, not summarised; wraps at 200")
add_rand("vec_1001", "1-D, 1001 elements: summarised", 7, (1001,), 1.0)
add_rand("vec_1000", "1-D, exactly 1000 elements: not summarised (wrapped at 200)", 8, (1000,), 1.0)
add("scores_5x5", randn(5, 5, scale=0.3), "[5, 5] scores (In [8]-like)")
s = randn(5, 5, scale=0.3)
add("tril_5x5", torch.tril(s), "tril of [5, 5] scores (In [9]-like)")
add("neginf_5x5", s.masked_fill(~torch.tril(torch.ones(5, 5)).bool(), -inf),
    "-inf above the diagonal (In [10]-like)")
add("weights_5x5", torch.softmax(s.masked_fill(~torch.tril(torch.ones(5, 5)).bool(), -inf), -1),
    "softmax weights with exact 1 and 0 (In [11]-like)")
add("round_half", f32([0.125, 0.375, -0.125, 0.005, 0.015, 0.025, -0.005, 2.675]),
    "ties and near-ties at the second decimal (rounded as Python's '{:.2f}')")
add("neg_zero_p2", f32([[-0.001, 0.004], [0.2, -0.3]]), "values that print as -0.00 and 0.00")
add("int_mode_p2", f32([[1.0, -inf, -inf], [2.0, 3.0, -inf]]), "integer-valued with -inf")
add("scalar_loss_p2", f32(4.5372), "a loss: tensor(4.54)")
add("scalar_loss_round_p2", f32(4.605170249938965), "ln(100) at precision 2")
add("scalar_nan_p2", f32(nan), "the loss when every target is ignored")
add("scalar_big_p2", f32(123456.0), "a large scalar at precision 2")
add("tokens_5", torch.tensor([95, 11, 75, 30, 31]), "notebook 001 In [5]'s token ids")
add("tokens_one_digit", torch.tensor([3, 0, 7, 1, 9]), "int64 of one digit")
add("targets_ignored", torch.tensor([0, 1, 2, 3, -1]), "targets with one -1")
add("bool_mask_5", torch.tril(torch.ones(5, 5)) == 1, "notebook 001 In [13]")

# The fragile step of In [10], on crafted queries and keys (d = 4, so sqrt(d) = 2 exactly):
# query 2 . key 1 = 0 exactly: the only genuine 0 score on or below the diagonal.
fq = f32([[1.0, 0.0, 0.0, 0.0], [0.5, 1.0, 0.0, 0.0], [1.0, -1.0, 0.5, 0.0], [0.5, 0.0, 1.0, 1.0]])
fk = f32([[1.0, 0.0, 0.0, 0.5], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.5, 0.5, 0.5, 0.5]])
fv = f32([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]])
fscores = fq @ fk.t() / torch.sqrt(torch.tensor(4))
assert [(i, j) for i in range(4) for j in range(i + 1) if fscores[i, j] == 0] == [(2, 1)]
add("fragile_queries", fq, "crafted queries [4, 4]")
add("fragile_keys", fk, "crafted keys [4, 4]")
add("fragile_values", fv, "crafted values [4, 2]")
add("fragile_scores", fscores, "q @ k.t() / sqrt(4): a genuine 0 at [2, 1]")
ftril = torch.tril(fscores)
add("fragile_tril", ftril, "tril(scores)")
fbad = ftril.masked_fill(ftril == 0.0, -inf)
add("fragile_masked_eq0", fbad, "masked_fill(tril == 0, -inf): also masks the genuine 0 at [2, 1]")
add("fragile_weights_eq0", torch.softmax(fbad, -1), "softmax of that: row 2 is wrong")
causal = torch.tril(torch.ones(4, 4)) == 1
fgood = fscores.masked_fill(~causal, -inf)
add("fragile_masked_bool", fgood, "masked_fill(~(tril(ones) == 1), -inf): the boolean mask")
add("fragile_weights_bool", torch.softmax(fgood, -1), "softmax of that: the right weights")
add("fragile_context_eq0", torch.softmax(fbad, -1) @ fv, "context vectors with the == 0 mask")
add("fragile_context_bool", torch.softmax(fgood, -1) @ fv, "context vectors with the boolean mask")

write("print_cases.json", {"provenance": provenance(
    "repr(tensor) at precision 2, linewidth 200, for chapter 10's printouts"), "cases": cases})

# ------------------------------------------------------------------------------ the pipeline
V, d, T = 100, 768, 5
torch.manual_seed(SEED)
emb = torch.nn.Embedding(V, d)
clf = torch.nn.Linear(d, V)
q_proj, k_proj, v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
tokens = torch.randint(V, (T,))
with torch.no_grad():
    x = emb(tokens)
    q, k, v = q_proj(x), k_proj(x), v_proj(x)
    raw_att = q @ k.t() / torch.sqrt(torch.tensor(d))
    tril_att = torch.tril(raw_att)
    masked_att = tril_att.masked_fill(tril_att == 0.0, float("-inf"))
    weights = torch.softmax(masked_att, -1)
    new_v = weights @ v
    logits = clf(new_v)
    argmax = logits.argmax(-1)
    targets = torch.arange(0, T)
    loss = F.cross_entropy(logits, targets, ignore_index=-1)
    targets_pad = targets.clone()
    targets_pad[-1] = -1
    loss_pad = F.cross_entropy(logits, targets_pad, ignore_index=-1)
    targets_none = torch.full((T,), -1)
    loss_none = F.cross_entropy(logits, targets_none, ignore_index=-1)
    # the boolean causal mask (the robust version) gives the same here: no genuine 0 score.
    weights_bool = torch.softmax(raw_att.masked_fill(~(torch.tril(torch.ones(T, T)) == 1), -inf), -1)
    try:
        F.cross_entropy(logits, torch.tensor([0, 1, 2, 3, V]), ignore_index=-1)
        error = None
    except IndexError as e:
        error = "IndexError: " + str(e)

w = emb.weight.detach()
steps = {}
for name, t in [("tokens", tokens), ("x", x), ("raw_att", raw_att), ("tril_att", tril_att),
                ("masked_att", masked_att), ("weights", weights), ("weights_bool", weights_bool),
                ("new_v", new_v), ("logits", logits), ("argmax", argmax), ("targets", targets),
                ("loss", loss), ("targets_pad", targets_pad), ("loss_pad", loss_pad),
                ("targets_none", targets_none), ("loss_none", loss_none)]:
    entry = describe(t)
    if name == "x":
        # 3840 values: keep the first and last 8 of each row and each row's float64 sum.
        entry = {"shape": list(t.shape), "dtype": "float32",
                 "row_heads_bits": [bits(r[:8]) for r in t], "row_tails_bits": [bits(r[-8:]) for r in t],
                 "row_sums_float64": [float(r.double().sum()) for r in t]}
    if name not in ("x", "logits"):
        entry["torch"] = printed(t)
    steps[name] = entry

pipeline = {
    "provenance": provenance("notebook 001 run after torch.manual_seed(%d); see the script" % SEED),
    "seed": SEED,
    "V": V, "d": d, "T": T,
    "python": [
        "torch.manual_seed(%d)" % SEED,
        "emb = torch.nn.Embedding(V, d); clf = torch.nn.Linear(d, V)",
        "q_proj, k_proj, v_proj = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)",
        "tokens = torch.randint(V, (T,)); x = emb(tokens); q, k, v = q_proj(x), k_proj(x), v_proj(x)",
        "raw_att = q @ k.t() / torch.sqrt(torch.tensor(d)); tril_att = torch.tril(raw_att)",
        "masked_att = tril_att.masked_fill(tril_att == 0., float('-inf')); weights = torch.softmax(masked_att, -1)",
        "new_v = weights @ v; logits = clf(new_v); argmax = logits.argmax(-1)",
        "loss = F.cross_entropy(logits, torch.arange(0, T), ignore_index=-1)",
        "loss_pad: targets [0, 1, 2, 3, -1]; loss_none: targets all -1 (ignore_index=-1)",
    ],
    "embedding_weight": {
        "shape": list(w.shape),
        "first_32_bits": bits(w.reshape(-1)[:32]),
        "last_32_bits": bits(w.reshape(-1)[-32:]),
        "sum_float64": float(w.double().sum()),
        "sum_abs_float64": float(w.double().abs().sum()),
    },
    "linear_bias_last_bits": {
        "clf": bits(clf.bias[-4:]), "v_proj": bits(v_proj.bias[-4:]),
    },
    "error_target_out_of_range": error,
    "steps": steps,
}
write("pipeline.json", pipeline)

# ------------------------------------------------------------------------------ cross-entropy
ce = []


def add_ce(name, logits, targets, ignore_index=-100):
    with torch.no_grad():
        out = F.cross_entropy(logits, targets, ignore_index=ignore_index)
        logp = F.log_softmax(logits, -1)
    ce.append({"name": name, "logits": describe(logits), "targets": targets.tolist(),
               "ignore_index": ignore_index, "loss_bits": bits(out),
               "log_softmax": describe(logp), "torch": printed(out)})


add_ce("small", f32([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]), torch.tensor([1, 2]))
add_ce("ignore_default", f32([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 2.0, 2.0]]),
       torch.tensor([1, -100, 0]))
add_ce("ignore_minus1", f32([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 2.0, 2.0]]),
       torch.tensor([-1, 2, 0]), ignore_index=-1)
add_ce("ignore_in_range", f32([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0], [2.0, 2.0, 2.0]]),
       torch.tensor([0, 2, 0]), ignore_index=0)
add_ce("all_ignored", f32([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([-1, -1]), ignore_index=-1)
add_ce("large_logits", f32([[1000.0, 0.0, -1000.0], [-5000.0, 5000.0, 4999.0]]),
       torch.tensor([2, 2]))
add_ce("neg_inf_logit", f32([[0.0, -inf, 1.0], [2.0, 1.0, -inf]]), torch.tensor([0, 1]))
add_ce("uniform_100", torch.zeros(3, 100), torch.tensor([5, 50, 99]))
add_ce("random_5x100", randn(5, 100, scale=0.5), torch.tensor([0, 1, 2, 3, 4]), ignore_index=-1)
add_ce("cascade_40x7", randn(40, 7, scale=2.0),
       torch.from_numpy(rng.integers(0, 7, 40).astype(np.int64)))
t37 = torch.from_numpy(rng.integers(0, 7, 37).astype(np.int64))
t37[::5] = -100
add_ce("cascade_37x7_ignored", randn(37, 7, scale=2.0), t37)
add_ce("cascade_300x3", randn(300, 3, scale=3.0),
       torch.from_numpy(rng.integers(0, 3, 300).astype(np.int64)))

write("cross_entropy.json", {"provenance": provenance(
    "torch.nn.functional.cross_entropy (reduction='mean') and log_softmax(-1) on crafted inputs"),
    "cases": ce})
