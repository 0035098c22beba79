#!/usr/bin/python3
"""Records what PyTorch returns when NaN (and infinities) go in, for tests/test_nan.cpp.

Run with Debian's interpreter (python3-torch 1.13, python3-numpy 1.24):

    /usr/bin/python3 tools/oracle/nan_cases.py

It writes data/oracle/nan_cases.json: for each case the function the library mirrors
(``call``), its float32 inputs and int64 arguments, and PyTorch's output, every float32 as its
IEEE-754 bit pattern (so NaN is recorded exactly where it stands; its payload and sign are not
compared). The printing cases record ``repr(tensor)``, ``str(tensor.numpy())`` and Python's
``repr(float)`` of such values.

The rule checked is "NaN in, NaN out": a NaN input reaches every output PyTorch lets it reach,
and no other. PyTorch 1.13 has no ``scaled_dot_product_attention``; its cases record the math
path it documents in 2.x, ``softmax(q @ k^T / sqrt(E)) @ v``, computed with 1.13's operators.
"""

import datetime
import json
import math
import os
import platform

import numpy as np
import torch

from oracle_common import blas_library, debian_version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "data", "oracle", "nan_cases.json")

NAN = float("nan")
INF = float("inf")

cases = []


def f32(values):
    return torch.tensor(values, dtype=torch.float32)


def enc(t):
    """A tensor as {"dtype", "shape", "bits" (float32) or "values" (int64 / bool)}."""
    t = t.detach().contiguous()
    if t.dtype == torch.float32:
        return {"dtype": "float32", "shape": list(t.shape),
                "bits": t.numpy().view(np.uint32).ravel().tolist()}
    if t.dtype == torch.bool:
        return {"dtype": "bool", "shape": list(t.shape), "values": [int(v) for v in t.reshape(-1).tolist()]}
    return {"dtype": "int64", "shape": list(t.shape), "values": t.reshape(-1).tolist()}


def add(name, call, inputs, output, **args):
    assert all(c["name"] != name for c in cases), name
    case = {"name": name, "call": call, "inputs": [enc(t) for t in inputs], "args": args}
    if isinstance(output, str):
        case["text"] = output
    else:
        case["output"] = enc(output)
    cases.append(case)


# ---- softmax and its relatives (attn::softmax, masked_softmax, log_softmax, cross_entropy)
for name, rows in [
    ("softmax_nan_first", [NAN, 1.0]),
    ("softmax_nan_last", [1.0, NAN]),
    ("softmax_nan_row_beside_finite_row", [[NAN, 1.0, 2.0], [1.0, 2.0, 3.0]]),
    ("softmax_nan_beside_neg_inf", [[NAN, -INF], [-INF, 0.0]]),
    ("softmax_pos_inf", [INF, 1.0]),
    ("softmax_nan_in_long_row", [float(i) / 7 for i in range(11)] + [NAN] + [0.5] * 5),
]:
    x = f32(rows)
    add(name, "softmax", [x], torch.softmax(x, -1))
    # attn::masked_softmax is softmax on every row that is not entirely -inf: the same answer.
    add("masked_" + name, "masked_softmax", [x], torch.softmax(x, -1))
    add("log_" + name, "log_softmax", [x], torch.log_softmax(x, -1))
x = f32([[NAN, -INF], [-INF, -INF]])
# The fully masked second row is masked_softmax's own rule (zeros), not a PyTorch result.
add("masked_softmax_nan_row_and_masked_row", "masked_softmax_first_row", [x], torch.softmax(x[:1], -1))
logits = f32([[NAN, 1.0, 0.5], [0.25, 2.0, -1.0]])
targets = torch.tensor([1, 2])
add("cross_entropy_nan_logit", "cross_entropy", [logits], torch.nn.functional.cross_entropy(logits, targets),
    targets=targets.tolist())
add("cross_entropy_nan_logit_ignored_row", "cross_entropy", [logits],
    torch.nn.functional.cross_entropy(logits, torch.tensor([-100, 2])), targets=[-100, 2])

# ---- reductions and elementwise functions
x = f32([[NAN, 1.0, 2.0], [3.0, 4.0, INF]])
add("sum_dim0", "sum_dim", [x], x.sum(0), dim=0)
add("sum_dim1", "sum_dim", [x], x.sum(1), dim=1)
add("sum_all", "sum_all", [x], x.sum())
add("sum_inf_minus_inf", "sum_all", [f32([INF, -INF, 1.0])], f32([INF, -INF, 1.0]).sum())
add("argmax_nan_later", "argmax", [f32([1.0, 5.0, NAN, 2.0])], f32([1.0, 5.0, NAN, 2.0]).argmax(-1), dim=-1)
y = f32([[1.0, NAN], [3.0, 2.0]])
add("argmax_dim0", "argmax", [y], y.argmax(0), dim=0)
add("exp", "exp", [f32([NAN, INF, -INF, 0.0])], torch.exp(f32([NAN, INF, -INF, 0.0])))
m = f32([[NAN, NAN, NAN], [NAN, NAN, NAN]])
add("tril", "tril", [m], torch.tril(m), diagonal=0)
add("triu_1", "triu", [m], torch.triu(m, 1), diagonal=1)
add("transpose", "transpose", [x], x.transpose(0, 1))
add("cat", "cat", [f32([NAN, 1.0]), f32([INF])], torch.cat([f32([NAN, 1.0]), f32([INF])]))
add("stack", "stack", [f32([NAN, 1.0]), f32([2.0, NAN])], torch.stack([f32([NAN, 1.0]), f32([2.0, NAN])]))
mask = torch.tensor([[True, False, False], [False, False, True]])
add("masked_fill_over_nan", "masked_fill", [x, mask.float()], x.masked_fill(mask, 0.0), value=0.0)
add("masked_fill_with_nan", "masked_fill", [f32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), mask.float()],
    f32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).masked_fill(mask, NAN), value="nan")

# ---- products
a = f32([[NAN, 1.0], [2.0, 3.0]])
b = f32([[1.0, 0.0], [0.0, 1.0]])
add("matmul_nan_times_zero", "matmul", [a, b], a @ b)
add("matmul_batched", "matmul", [a.reshape(1, 2, 2).repeat(2, 1, 1), b], a.reshape(1, 2, 2).repeat(2, 1, 1) @ b)
# A zero times NaN or infinity is NaN: the reference BLAS skips a zero of the left factor
# (`IF (B(L,J).NE.ZERO)` in sgemm), PyTorch's BLAS does not.
z = f32([[0.0, 1.0], [0.0, 0.0]])
bn = f32([[NAN, 1.0], [2.0, INF]])
add("matmul_zero_times_nan", "matmul", [z, bn], z @ bn)
add("matmul_zero_times_inf", "matmul", [f32([[1.0, 0.0]]), f32([[1.0, 2.0], [3.0, -INF]])],
    f32([[1.0, 0.0]]) @ f32([[1.0, 2.0], [3.0, -INF]]))
add("matmul_vector_zero_times_nan", "matmul", [f32([0.0, 0.0]), bn], f32([0.0, 0.0]) @ bn)
add("matmul_batched_zero_times_nan", "matmul", [z.reshape(1, 2, 2).repeat(3, 1, 1), bn],
    z.reshape(1, 2, 2).repeat(3, 1, 1) @ bn)
q = f32([[[1.0, 0.0], [NAN, 1.0], [0.5, 0.5]]])
k = f32([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
v = f32([[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]])
add("sdpa_nan_query_row", "scaled_dot_product_attention", [q, k, v],
    torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(2), -1) @ v)
kn = k.clone()
kn[0, 2, 1] = NAN
causal = torch.ones(3, 3).tril().bool()
add("sdpa_nan_key_causal", "scaled_dot_product_attention_causal", [f32([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]]), kn, v],
    torch.softmax((f32([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]]) @ kn.transpose(-2, -1) / math.sqrt(2))
                  .masked_fill(~causal, -INF), -1) @ v)
# The math path's additive mask (F.scaled_dot_product_attention in 2.x, nn.MultiheadAttention in
# 1.13): + (-inf) where hidden, so a hidden key's +inf or NaN score is NaN, where masked_fill
# gives -inf. Query 0's score of the future key 2 is +inf: NaN row; query 1's is -inf: -inf.
qa = f32([[[1.0, 0.0], [-1.0, 0.0], [0.5, 0.5]]])
ka = f32([[[1.0, 0.0], [0.0, 1.0], [INF, 0.0]]])
additive = torch.zeros(3, 3).masked_fill(~causal, -INF)
add("sdpa_inf_key_causal_additive", "scaled_dot_product_attention_causal_additive", [qa, ka, v],
    torch.softmax(qa @ ka.transpose(-2, -1) / math.sqrt(2) + additive, -1) @ v)

# ---- modules (nn::Linear with given weights, nn::Dropout, nn::Embedding)
w = f32([[1.0, 2.0], [3.0, 4.0], [0.0, 0.0]])
bias = f32([0.5, -0.5, 0.0])
xin = f32([[NAN, 1.0], [1.0, 2.0]])
add("linear_nan_input", "linear", [xin, w, bias], torch.nn.functional.linear(xin, w, bias))
add("linear_nan_bias", "linear", [f32([[1.0, 2.0]]), w, f32([NAN, 0.0, 0.0])],
    torch.nn.functional.linear(f32([[1.0, 2.0]]), w, f32([NAN, 0.0, 0.0])))
add("linear_zero_input_nan_weight", "linear", [f32([[0.0, 1.0]]), f32([[NAN, 2.0], [1.0, INF]]), f32([0.0, 0.0])],
    torch.nn.functional.linear(f32([[0.0, 1.0]]), f32([[NAN, 2.0], [1.0, INF]]), f32([0.0, 0.0])))
torch.manual_seed(123)
xd = f32([NAN, 1.0, NAN, 2.0, INF, -1.0])
add("dropout_p05_seed123", "dropout", [xd], torch.nn.functional.dropout(xd, 0.5, True), seed=123, p_percent=50)
add("dropout_p1", "dropout", [xd], torch.nn.functional.dropout(xd, 1.0, True), seed=123, p_percent=100)
table = f32([[NAN, 1.0], [2.0, INF]])
ids = torch.tensor([1, 0, 0])
add("embedding", "embedding", [table], torch.nn.functional.embedding(ids, table), ids=ids.tolist())

# ---- printers
for name, t in [("repr_softmax_nan", torch.softmax(f32([NAN, 1.0]), -1)),
                ("repr_nan_inf_sci", f32([NAN, 1.0e9, -INF, 1.0e-5])),
                ("repr_nan_2d", f32([[NAN, 0.5], [INF, -0.25]]))]:
    add(name, "repr", [t], repr(t))
    add("numpy_" + name, "numpy_str", [t], str(t.numpy()))
add("repr_float_nan", "repr_float", [], repr(NAN))
add("repr_float_neg_inf", "repr_float", [], repr(-INF))

provenance = {
    "script": "tools/oracle/nan_cases.py",
    "python": platform.python_version(),
    "torch": torch.__version__,
    "python3-torch": debian_version(),
    "numpy": np.__version__,
    "blas": blas_library(),
    "date": datetime.date.today().isoformat(),
    "float32_values": "IEEE-754 bit patterns as unsigned 32-bit integers, row-major",
    "rule": "NaN in, NaN out: compare where NaN stands exactly, finite values bit for bit "
            "(scaled_dot_product_attention: within 1e-6, 1.13 has no fused kernel)",
}
with open(OUT, "w", encoding="utf-8") as fh:
    json.dump({"provenance": provenance, "cases": cases}, fh, indent=1)
    fh.write("\n")
print(f"wrote {OUT}: {len(cases)} cases")
