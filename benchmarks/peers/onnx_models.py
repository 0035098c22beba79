#!/usr/bin/python3
"""Builds the ONNX models of one benchmark entry, from the weights PyTorch draws for it.

    /usr/bin/python3 benchmarks/peers/onnx_models.py --entry mha --T 1024 --out DIR

Needs Debian's python3-torch and python3-onnx. Builds Raschka's module exactly as
benchmarks/peers/torch_side.py does (torch.manual_seed(0), the module, x = torch.rand(1, T,
768)), runs it once, and writes to DIR:

  x.bin, y.bin        the input and PyTorch's output, raw float32 ([1, T, 768] each)
  exported.onnx       torch.onnx.export of the module (opset 17): the graph ONNX Runtime's
                      optimiser sees when a user exports the class as it is
  attention.onnx      the module's projections around com.microsoft Attention
                      (unidirectional=1): q, k, v in one packed weight, as GPT-2 has them
  mha.onnx            MatMul q, k, v, then com.microsoft MultiHeadAttention (unidirectional=1)
  gqa.onnx            MatMul q, k, v, then com.microsoft GroupQueryAttention (causal; with
                      num_kv_heads key/value heads, and local_window_size for a window)
  manifest.json       what was built, with the torch and onnx versions

Each fused model ends with the module's own output projection (MatMul, + bias where the
class has one). Which variants an entry gets is its `ort` field in table.py. The outputs'
agreement with y.bin is checked when ONNX Runtime runs them (run.mjs reports the largest
absolute difference; the driver refuses a model beyond its bound).
"""
import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "run"))  # table.py

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import table  # noqa: E402
import torch_side  # noqa: E402

OPSET = 17
MS = "com.microsoft"


def np32(t):
    return t.detach().contiguous().numpy().astype(np.float32)


def linear_weights(entry, module):
    """(Wq, Wk, Wv, bq, bk, bv, Wo, bo) as [in, out] matrices and [out] biases (None when
    absent), read from the module's own layers; Wo is None for classes without out_proj."""
    def lin(l):
        return np32(l.weight).T.copy(), (np32(l.bias) if l.bias is not None else None)
    if entry.key == "gpt2":
        S = table.D
        w, b = np32(module.c_attn.weight), np32(module.c_attn.bias)
        parts = [(w[i * S:(i + 1) * S].T.copy(), b[i * S:(i + 1) * S]) for i in range(3)]
        wo, bo = lin(module.c_proj)
        return parts[0][0], parts[1][0], parts[2][0], parts[0][1], parts[1][1], parts[2][1], wo, bo
    (wq, bq), (wk, bk), (wv, bv) = lin(module.W_query), lin(module.W_key), lin(module.W_value)
    wo, bo = lin(module.out_proj) if hasattr(module, "out_proj") else (None, None)
    return wq, wk, wv, bq, bk, bv, wo, bo


def heads_of(entry):
    """(num_heads, num_kv_heads, window or -1) for the fused operators."""
    if entry.key == "causal":
        return 1, 1, -1
    kv = entry.extra.get("num_kv_heads", table.H)
    return table.H, kv, entry.extra.get("window", -1)


class Graph:
    """A small graph under construction: initializers, nodes, one input x, one output y."""

    def __init__(self, T):
        self.T, self.inits, self.nodes, self.n = T, [], [], 0

    def const(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, op_type, inputs, domain="", n_out=1, **attrs):
        self.n += 1
        outs = [f"{op_type.lower()}{self.n}_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, domain=domain or None,
                                           name=f"{op_type}_{self.n}", **attrs))
        return outs[0] if n_out == 1 else outs

    def linear(self, x, w, b, name):
        y = self.op("MatMul", [x, self.const(f"{name}_weight_T", w)])
        return self.op("Add", [y, self.const(f"{name}_bias", b)]) if b is not None else y

    def model(self, out, d_out, title):
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, self.T, table.D])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, self.T, d_out])
        self.nodes.append(helper.make_node("Identity", [out], ["y"], name="output"))
        g = helper.make_graph(self.nodes, title, [x], [y], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET),
                                                helper.make_opsetid(MS, 1)],
                              producer_name="attention-textbook benchmark")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def finish(g, ctx, wo, bo, title):
    """The module's output projection (if it has one) and the model."""
    out = g.linear(ctx, wo, bo, "out_proj") if wo is not None else ctx
    return g.model(out, table.D, title)


def fused_attention(entry, module, T):
    """com.microsoft Attention: packed [d_in, 3 d_out] weights, unidirectional=1."""
    wq, wk, wv, bq, bk, bv, wo, bo = linear_weights(entry, module)
    g = Graph(T)
    w = g.const("qkv_weight", np.concatenate([wq, wk, wv], axis=1))
    zeros = np.zeros(wq.shape[1], np.float32)
    b = g.const("qkv_bias", np.concatenate([v if v is not None else zeros for v in (bq, bk, bv)]))
    num_heads, _, _ = heads_of(entry)
    ctx = g.op("Attention", ["x", w, b], domain=MS, num_heads=num_heads, unidirectional=1)
    return finish(g, ctx, wo, bo, f"{entry.key}_attention")


def fused_mha(entry, module, T):
    """MatMul q, k, v; com.microsoft MultiHeadAttention with unidirectional=1."""
    wq, wk, wv, bq, bk, bv, wo, bo = linear_weights(entry, module)
    g = Graph(T)
    q, k, v = (g.linear("x", w, b, n) for w, b, n in ((wq, bq, "W_query"), (wk, bk, "W_key"),
                                                     (wv, bv, "W_value")))
    num_heads, _, _ = heads_of(entry)
    ctx = g.op("MultiHeadAttention", [q, k, v], domain=MS, num_heads=num_heads,
               unidirectional=1)
    return finish(g, ctx, wo, bo, f"{entry.key}_mha")


def fused_gqa(entry, module, T):
    """MatMul q, k, v; com.microsoft GroupQueryAttention (causal, no past, the whole
    sequence: seqlens_k = T - 1, total_sequence_length = T)."""
    wq, wk, wv, bq, bk, bv, wo, bo = linear_weights(entry, module)
    g = Graph(T)
    q, k, v = (g.linear("x", w, b, n) for w, b, n in ((wq, bq, "W_query"), (wk, bk, "W_key"),
                                                     (wv, bv, "W_value")))
    num_heads, kv_heads, window = heads_of(entry)
    seqlens_k = g.const("seqlens_k", np.array([T - 1], np.int32))
    total = g.const("total_sequence_length", np.array(T, np.int32))
    # Raschka's window W keeps keys with 0 <= q_pos - k_pos < W. ONNX Runtime 1.30's CPU
    # kernel agrees with local_window_size = W (W - 1 and W + 1 both differ from PyTorch by
    # about 1.7e-3 at T = 512: checked, since the documentation does not say).
    attrs = dict(num_heads=num_heads, kv_num_heads=kv_heads)
    if window > 0:
        attrs["local_window_size"] = window
    outs = g.op("GroupQueryAttention", [q, k, v, "", "", seqlens_k, total], domain=MS,
                n_out=3, **attrs)
    return finish(g, outs[0], wo, bo, f"{entry.key}_gqa")


def exported(entry, module, T, x, path):
    """torch.onnx.export of the module as it is (opset 17, fixed shapes)."""
    torch.onnx.export(module, (x,), str(path), input_names=["x"], output_names=["y"],
                      opset_version=OPSET, do_constant_folding=True)


BUILDERS = {"attention": fused_attention, "mha": fused_mha, "gqa": fused_gqa}
VARIANTS = ("exported",) + tuple(BUILDERS)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--entry", required=True, choices=sorted(table.BY_KEY))
    p.add_argument("--T", type=int, required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--variants", help="comma-separated; default: the entry's ort field")
    a = p.parse_args()
    entry = table.BY_KEY[a.entry]
    variants = a.variants.split(",") if a.variants else list(entry.ort)
    a.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)
    module, x = torch_side.build(entry, a.T)
    with torch.no_grad():
        y = module(x)
        np32(x).tofile(a.out / "x.bin")
        np32(y).tofile(a.out / "y.bin")
        for v in variants:
            path = a.out / f"{v}.onnx"
            if v == "exported":
                exported(entry, module, a.T, x, path)
            else:
                onnx.save(BUILDERS[v](entry, module, a.T), str(path))
    manifest = {"entry": entry.key, "T": a.T, "seed": table.SEED, "variants": variants,
                "x_shape": list(x.shape), "y_shape": list(y.shape),
                "torch": torch.__version__, "onnx": onnx.__version__, "opset": OPSET}
    (a.out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(json.dumps(manifest))


if __name__ == "__main__":
    main()
