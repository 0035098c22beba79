#!/usr/bin/python3
"""Records chapter 21's first fit in PyTorch: chapter 7's MultiHeadAttention trained by SGD and AdamW.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as multihead.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/attention_learns.py

It writes
- data/sources/oracle/oracle_21_attention_learns.txt: the run as a notebook's text export
  (`In [n]:` cells, the code as executed, what it printed), which tools/extract_book.py reads
  like the notebooks, so the chapter's printed losses and weights are compared with it;
- data/oracle/attention_learns.json: the same runs as float32 bits (every step's loss, every
  parameter after the last step), with provenance, for tests/test_attention_learns.cpp.

The module is Raschka's chapter 3 `MultiHeadAttention` (rasbt/LLMs-from-scratch
ch03/01_main-chapter-code/ch03.ipynb, commit 28c65cdfbc3338e2e040016eea4b7fdf556e4d57; Apache
License 2.0, (c) Sebastian Raschka), as tools/oracle/reference/ch03.py runs it from
data/sources/raschka/raschka_ch03.txt (queries projected first), installed as
`previous_chapters` as his later chapters import it; the input is the book's
(tools/oracle/book_inputs.py).
"""

import os
import sys

import numpy as np
import torch
from book_inputs import BATCH_DIM0_CODE, setup_cell
from oracle_common import arguments, export_cells, provenance, write_json
from reference import MultiHeadAttention

SCRIPT = "tools/oracle/attention_learns.py"
RASCHKA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"

CELLS = [
    setup_cell("from previous_chapters import MultiHeadAttention", BATCH_DIM0_CODE),
    """def fit(optimizer_class, **options):
    torch.manual_seed(123)
    mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)
    target = torch.rand(2, 6, 2)
    optimizer = optimizer_class(mha.parameters(), **options)
    losses = []
    for step in range(20):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(mha(batch), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
        print(f"step {step:2d}: loss {loss.item():.4f}")
    return mha, losses""",
    """mha, sgd_losses = fit(torch.optim.SGD, lr=0.5)""",
    """print(mha.W_query.weight)""",
    """sgd_params = {name: p.detach().clone() for name, p in mha.named_parameters()}
mha, adamw_losses = fit(torch.optim.AdamW, lr=0.01, weight_decay=0.1)""",
    """print(mha.W_query.weight)""",
    """adamw_params = {name: p.detach().clone() for name, p in mha.named_parameters()}""",
    """class AttentionOnlyTransformer(torch.nn.Module):
    def __init__(self, vocab_size, context_length, emb_dim, num_heads, num_layers=2):
        super().__init__()
        self.tok_emb = torch.nn.Embedding(vocab_size, emb_dim)
        self.pos_emb = torch.nn.Embedding(context_length, emb_dim)
        self.blocks = torch.nn.ModuleList(
            [MultiHeadAttention(emb_dim, emb_dim, context_length, 0.0, num_heads) for _ in range(num_layers)])
        self.out_head = torch.nn.Linear(emb_dim, vocab_size, bias=False)
    def forward(self, ids):
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = x + block(x)
        return self.out_head(x)
def repeated_tokens(b, half, vocab_size):
    first = torch.randint(0, vocab_size, (b, half))
    return torch.cat([first, first], 1)""",
    """V, B = 32, 32
def half_losses(logits, targets, half):
    first = torch.nn.functional.cross_entropy(logits[:, :half - 1].reshape(-1, V), targets[:, :half - 1].reshape(-1))
    second = torch.nn.functional.cross_entropy(logits[:, half:].reshape(-1, V), targets[:, half:].reshape(-1))
    return first, second
torch.manual_seed(123)
model = AttentionOnlyTransformer(vocab_size=V, context_length=23, emb_dim=32, num_heads=2)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
curve = []
for step in range(1000):
    half = torch.randint(6, 13, (1,)).item()
    seq = repeated_tokens(B, half, V)
    logits = model(seq[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    first, second = half_losses(logits.detach(), seq[:, 1:], half)
    curve.append((loss.detach().clone(), first, second))
    if step % 50 == 0 or step == 999:
        print(f"step {step:3d}: loss {loss.item():.4f}, first half {first.item():.4f}, second half {second.item():.4f}")""",
]


def export(path, header, cells):
    """The cells run and written as a text export (oracle_common.export_cells), importing the
    module as `previous_chapters`: the cells' namespace."""
    return export_cells(path, header, cells, {"previous_chapters": {"MultiHeadAttention": MultiHeadAttention}})[0]


def bits(t):
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def main():
    args = arguments(__doc__, "attention_learns.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    os.makedirs(args.sources, exist_ok=True)
    ns = export(os.path.join(args.sources, "oracle_21_attention_learns.txt"),
                f"Text export of an oracle run for chapter 21 (attention learns): Raschka's chapter 3 "
                f"MultiHeadAttention (rasbt/LLMs-from-scratch ch03/01_main-chapter-code, commit {RASCHKA_COMMIT}; "
                f"Apache License 2.0, (c) Sebastian Raschka) trained with torch.optim.SGD and AdamW, executed by "
                f"{SCRIPT} with Debian's {prov['debian_package']} (torch {prov['torch_version']}) on the "
                f"reference BLAS, {prov['date']}: code cells and their printed outputs, in order.", CELLS)
    runs = []
    induction = {"name": "induction", "python": "cells 8-9: AttentionOnlyTransformer(32, 23, 32, 2), AdamW(lr=0.01), 1000 steps of 6 to 12 tokens repeated",
                 "loss_bits": [bits(c[0])[0] for c in ns["curve"]],
                 "first_half_bits": [bits(c[1])[0] for c in ns["curve"]],
                 "second_half_bits": [bits(c[2])[0] for c in ns["curve"]]}
    for name, python, losses, params in (
            ("sgd", "fit(torch.optim.SGD, lr=0.5)", ns["sgd_losses"], ns["sgd_params"]),
            ("adamw", "fit(torch.optim.AdamW, lr=0.01, weight_decay=0.1)", ns["adamw_losses"], ns["adamw_params"])):
        runs.append({"name": name, "python": python, "loss_bits": [bits(l)[0] for l in losses],
                     "params_after": {n: {"shape": list(p.shape), "bits": bits(p)} for n, p in params.items()}})
    doc = {**prov,
           "format": "Each run: `python` is the call of the script's fit() (cell 2 of the export); "
                     "`loss_bits` the float32 bits of each step's loss (before that step's update); "
                     "`params_after` every parameter in named_parameters() order after the 20 steps, "
                     "as float32 bits (uint32, row-major). `induction`: cell 9's training of the attention-only "
                     "transformer, every step's loss and first/second-half losses as float32 bits.",
           "runs": runs, "induction": induction}
    write_json(args.out, doc)
    print(f"wrote {args.out} and oracle_21_attention_learns.txt in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
