#!/usr/bin/python3
"""Records PyTorch autograd's gradients of the attention modules (chapters 19 and 20).

Run with Debian's interpreter, which has python3-torch 1.13 (CPU, no MKL: the portable
Bernoulli path for dropout), on Debian's reference BLAS (netlib `libblas3`), as
tools/oracle/multihead.py explains:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/backward.py \
        [--out data/oracle/backward.json]

Each case seeds the default generator, builds a module (Raschka's `CausalAttention` and
`MultiHeadAttention`, ch. 3.5.3 and 3.6.2, run from data/sources/raschka/raschka_ch03.txt by
tools/oracle/reference/ch03.py),
runs an input that requires grad through it, takes a loss (`out.pow(2).mean()`, the book's
loss, or `mse_loss(out, target)`), calls `loss.backward()` and records the loss, every
parameter's `.grad` in `named_parameters()` order and the input's `.grad`: float32 values as
exact decimal doubles, and for small tensors `repr` (what `print` shows). The first two cases
are chapter 19's: the book's batch (Raschka ch. 3.3, stacked twice), `MultiHeadAttention(d_in=3,
d_out=2, context_length=6, dropout=0.0 / 0.5, num_heads=2)` after `torch.manual_seed(123)`.

Before writing, the script checks that the forward of the first case reproduces the book's
printed context vectors (Raschka ch. 3.6.2, data/book/), so the gradients are of the book's
module.

It also runs the cells chapters 19 and 20 reprint and writes them as text exports, like the
notebooks' (`In [n]:`, the code as executed, what it printed): data/sources/oracle/
oracle_19_gradients.txt and oracle_20_flash_backward.txt, which tools/extract_book.py turns into
book entries. In those cells `previous_chapters` is the reference `MultiHeadAttention`
(Raschka's ch04 code imports it under that name).

Neither building nor testing the project needs this script or PyTorch: the JSON it wrote is
committed, and tests/test_backward.cpp and chapter 19 read only that (and data/book/).
"""

import os
import sys

import torch
from book_inputs import BATCH, BATCH_DIM0_CODE, setup_cell
from oracle_common import ROOT, arguments, draws_since, export_cells, provenance, record, write_json
from reference import CausalAttention, MultiHeadAttention

SCRIPT = "tools/oracle/backward.py"


def run(seed, make, x_of, loss_kind):
    """Seed, build, draw the input (and target), forward, loss, backward; record it all."""
    torch.manual_seed(seed)
    module = make()
    x = x_of()
    target = None
    x.requires_grad_(True)
    out = module(x)
    if loss_kind == "pow2_mean":
        loss = out.pow(2).mean()
    else:
        target = torch.rand(out.shape)
        loss = torch.nn.functional.mse_loss(out, target)
    draws = draws_since(seed, torch.get_rng_state())
    loss.backward()
    outputs = {"context_vecs": record(out), "loss": record(loss)}
    outputs["loss"]["print"] = repr(loss)
    if target is not None:
        outputs["target"] = record(target)
    outputs["x"] = record(x)
    grads = [{"name": name, "grad": record(p.grad)} for name, p in module.named_parameters()]
    for g, (name, p) in zip(grads, module.named_parameters()):
        g["print"] = f"{name} {p.grad}" if p.grad.numel() <= 100 else None
    outputs["x_grad"] = record(x.grad)
    return {"outputs": outputs, "parameters": grads, "draws_after_forward": draws}


def case_cross_entropy(seed, N, C, targets):
    """cross_entropy with ignore_index=-100 (mean over the kept targets) and its backward."""
    torch.manual_seed(seed)
    logits = torch.randn(N, C, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor(targets), ignore_index=-100)
    loss.backward()
    return {"targets": targets, "outputs": {"logits": record(logits), "loss": record(loss),
                                            "logits_grad": record(logits.grad)}}


def case_embedding(seed, num, dim, ids):
    """Embedding's backward: rows of a repeated id add up."""
    torch.manual_seed(seed)
    emb = torch.nn.Embedding(num, dim)
    out = emb(torch.tensor(ids))
    loss = out.pow(2).mean()
    loss.backward()
    return {"ids": ids, "outputs": {"weight": record(emb.weight), "loss": record(loss),
                                    "weight_grad": record(emb.weight.grad)}}


def case_functional_chain(seed, b, T, E, Ev):
    """The steps of chapter 6's attention as separate functions, every intermediate's .grad."""
    torch.manual_seed(seed)
    q = torch.randn(b, T, E, requires_grad=True)
    k = torch.randn(b, T, E, requires_grad=True)
    v = torch.randn(b, T, Ev, requires_grad=True)
    scores = q @ k.transpose(1, 2)
    masked = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1), -torch.inf)
    scaled = masked / E ** 0.5
    weights = torch.softmax(scaled, dim=-1)
    out = weights @ v
    for t in (scores, masked, scaled, weights, out):
        t.retain_grad()
    loss = out.pow(2).mean()
    loss.backward()
    names = ["q", "k", "v", "scores", "masked", "scaled", "weights", "out"]
    tensors = [q, k, v, scores, masked, scaled, weights, out]
    # masked and scaled hold -inf, which JSON cannot: only their gradients are recorded.
    outputs = {n: record(t) for n, t in zip(names, tensors) if n not in ("masked", "scaled")}
    outputs.update({n + "_grad": record(t.grad) for n, t in zip(names, tensors)})
    outputs["loss"] = record(loss)
    return {"outputs": outputs}


def book_batch():
    return BATCH.clone()  # a tensor of its own: run() sets requires_grad on it


CASES = [
    ("book_mha_s123",
     "torch.manual_seed(123); mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, "
     "num_heads=2); batch.requires_grad_(True); context_vecs = mha(batch); "
     "loss = context_vecs.pow(2).mean(); loss.backward()",
     lambda: run(123, lambda: MultiHeadAttention(3, 2, 6, 0.0, 2), book_batch, "pow2_mean")),
    ("book_mha_dropout_s123",
     "torch.manual_seed(123); mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.5, "
     "num_heads=2); batch.requires_grad_(True); context_vecs = mha(batch)  # training mode; "
     "loss = context_vecs.pow(2).mean(); loss.backward()",
     lambda: run(123, lambda: MultiHeadAttention(3, 2, 6, 0.5, 2), book_batch, "pow2_mean")),
    ("causal_s5",
     "torch.manual_seed(5); ca = CausalAttention(4, 3, 7, 0.3, qkv_bias=True); x = torch.rand(3, 5, 4, "
     "requires_grad=True); loss = ca(x).pow(2).mean(); loss.backward()",
     lambda: run(5, lambda: CausalAttention(4, 3, 7, 0.3, qkv_bias=True),
                 lambda: torch.rand(3, 5, 4), "pow2_mean")),
    ("mha_mse_s7",
     "torch.manual_seed(7); mha = MultiHeadAttention(4, 6, 8, 0.3, 3, qkv_bias=True); x = torch.rand(3, 5, 4, "
     "requires_grad=True); out = mha(x); target = torch.rand(out.shape); "
     "loss = F.mse_loss(out, target); loss.backward()",
     lambda: run(7, lambda: MultiHeadAttention(4, 6, 8, 0.3, 3, qkv_bias=True),
                 lambda: torch.rand(3, 5, 4), "mse")),
    ("mha_long_s11",
     "torch.manual_seed(11); mha = MultiHeadAttention(8, 16, 40, 0.0, 4, qkv_bias=True); "
     "x = torch.rand(2, 37, 8, requires_grad=True); out = mha(x); target = torch.rand(out.shape); "
     "loss = F.mse_loss(out, target); loss.backward()",
     lambda: run(11, lambda: MultiHeadAttention(8, 16, 40, 0.0, 4, qkv_bias=True),
                 lambda: torch.rand(2, 37, 8), "mse")),
    ("cross_entropy_s3",
     "torch.manual_seed(3); logits = torch.randn(6, 11, requires_grad=True); "
     "loss = F.cross_entropy(logits, torch.tensor([3, -100, 0, 10, 3, -100])); loss.backward()",
     lambda: case_cross_entropy(3, 6, 11, [3, -100, 0, 10, 3, -100])),
    ("cross_entropy_s4",
     "torch.manual_seed(4); logits = torch.randn(9, 37, requires_grad=True); "
     "loss = F.cross_entropy(logits, targets); loss.backward()",
     lambda: case_cross_entropy(4, 9, 37, [0, 36, 5, -100, 17, 17, 2, 30, 8])),
    ("embedding_s5",
     "torch.manual_seed(5); emb = torch.nn.Embedding(10, 5); "
     "loss = emb(torch.tensor([[1, 3, 1], [9, 0, 3]])).pow(2).mean(); loss.backward()",
     lambda: case_embedding(5, 10, 5, [[1, 3, 1], [9, 0, 3]])),
    ("functional_chain_s6",
     "torch.manual_seed(6); q, k = torch.randn(2, 9, 4), torch.randn(2, 9, 4); v = torch.randn(2, 9, 3) "
     "(all requiring grad); scores = q @ k.transpose(1, 2); masked = scores.masked_fill(triu(ones(9, 9), 1)"
     ".bool(), -inf); scaled = masked / 4 ** 0.5; weights = softmax(scaled, -1); out = weights @ v; "
     "every intermediate .retain_grad(); out.pow(2).mean().backward()",
     lambda: case_functional_chain(6, 2, 9, 4, 3)),
]


# The cells chapters 19 and 20 reprint. No blank line inside a cell (extract_book.py's rule).
CELLS_19 = [
    setup_cell("from previous_chapters import MultiHeadAttention", BATCH_DIM0_CODE),
    """attn_scores_2 = (inputs @ inputs[1]).requires_grad_(True)
attn_weights_2 = torch.softmax(attn_scores_2, dim=0)
attn_weights_2.backward(torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
print(attn_scores_2.grad)""",
    """torch.manual_seed(123)
mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)
batch.requires_grad_(True)
context_vecs = mha(batch)
loss = context_vecs.pow(2).mean()
loss.backward()
print(loss)""",
    """for name, param in mha.named_parameters():
    print(name, param.grad)""",
    """print(batch.grad)""",
    """torch.manual_seed(123)
mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.5, num_heads=2)
batch.grad = None
context_vecs = mha(batch)  # training mode: dropout on the attention weights
loss = context_vecs.pow(2).mean()
loss.backward()
print(loss)""",
    """for name, param in mha.named_parameters():
    print(name, param.grad)""",
    """print(batch.grad)""",
]

CELLS_20 = [
    CELLS_19[0],
    """torch.manual_seed(123)
mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)
grads = {}
def keep_grad(name):  # a forward hook that keeps the gradient of the layer's output
    def hook(module, args, out):
        out.register_hook(lambda g: grads.__setitem__(name, g))
    return hook
for name in ("W_query", "W_key", "W_value"):
    getattr(mha, name).register_forward_hook(keep_grad(name))
mha(batch).pow(2).mean().backward()""",
    """print(grads["W_query"])  # dL/dQ, heads merged: [b, T, d_out]""",
    """print(grads["W_key"])  # dL/dK""",
    """print(grads["W_value"])  # dL/dV""",
]


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells), importing the
    module as `previous_chapters`."""
    export_cells(path, header, cells, {"previous_chapters": {"MultiHeadAttention": MultiHeadAttention}})


def check_against_book(cases):
    """The first case's forward must print the book's context vectors (Raschka ch. 3.6.2)."""
    path = os.path.join(ROOT, "data", "book", "rch03", "rch03-In36.txt")
    if not os.path.exists(path):
        return ["book block not found; forward not checked against the book"]
    c = cases["book_mha_s123"]["outputs"]["context_vecs"]
    with open(path, encoding="utf-8") as f:
        book = f.read()
    if not book.startswith(c["repr"][:-1]):  # repr without grad_fn; the book prints it
        raise SystemExit("the book's MultiHeadAttention context vectors are not reproduced")
    return ["reproduces the book's MultiHeadAttention context vectors (Raschka ch. 3.6.2, In [36])"]


def main():
    args = arguments(__doc__, "backward.json", sources=True)
    torch.set_num_threads(1)
    cases, listed = {}, []
    for name, python, fn in CASES:
        result = fn()
        cases[name] = result
        listed.append({"name": name, "python": python, **result})
    facts = check_against_book(cases)
    doc = provenance(SCRIPT,
        threads=1,
        format="Each case: `python` is the code that produced it (module classes as in this script). "
                  "`outputs`: context_vecs, loss (with `print`, print(loss)), x (the input), x_grad "
                  "(x.grad), target (mse cases); `parameters`: named_parameters() order, each "
                  "{name, grad, print (print(name, p.grad))}. A tensor is {shape, values (float32 "
                  "as exact decimal doubles, row-major), repr (print(t), tensors of at most 100 "
                  "elements)}. `draws_after_forward`: 32-bit draws since the seed. The cross_entropy_* "
                  "cases hold `targets` and outputs logits, loss, logits_grad; embedding_* `ids` and "
                  "outputs weight, loss (out.pow(2).mean()), weight_grad. functional_chain_*: each "
                  "intermediate and its `<name>_grad`.",
        facts_checked=facts,
        cases=listed)
    write_json(args.out, doc)
    run = (f"executed by {SCRIPT} with Debian's {doc['debian_package']} (torch {torch.__version__}) on the "
           f"reference BLAS, {doc['date']}: code cells and their printed outputs, in order.")
    os.makedirs(args.sources, exist_ok=True)
    export(os.path.join(args.sources, "oracle_19_gradients.txt"),
           "Text export of an oracle run of PyTorch autograd through Raschka's MultiHeadAttention "
           "(Build a Large Language Model (From Scratch), ch. 3.6.2; Apache License 2.0, (c) Sebastian "
           "Raschka), " + run, CELLS_19)
    export(os.path.join(args.sources, "oracle_20_flash_backward.txt"),
           "Text export of an oracle run of PyTorch autograd through Raschka's MultiHeadAttention "
           "(ch. 3.6.2), the gradients of its queries, keys and values, " + run, CELLS_20)
    print(f"wrote {args.out}: {len(listed)} cases; " + "; ".join(facts))


if __name__ == "__main__":
    sys.exit(main())
