#!/usr/bin/python3
"""Records what chapter 26's tests compare with: his data loader's order, every gradient of his GPT model, one AdamW step.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/gpt_backward.py

(about 10 minutes: the last case is one training step of the 163-million-parameter model.) His classes
come from his chapter 5 previous_chapters.py (data/sources/raschka/, commit b969b3e), imported as it is;
tiktoken's place is taken by tools/oracle/his_code.py's stand-in. It writes data/oracle/gpt_backward.json:
- `randperm` and `random64`: torch.randperm(n, generator=g) of a generator seeded with s, and
  torch.empty((), dtype=torch.int64).random_() after manual_seed(s): the draws a DataLoader makes;
- `loader`: after manual_seed(123), his create_dataloader_v1 for the training part of The Verdict
  (batch 2, 256 tokens, stride 256, shuffle, drop_last) and the validation part (no shuffle, no
  drop_last), iterated as chapter 26 iterates them: whole, cut after one batch (his calc_loss_loader
  with num_batches), interleaved with a dropout's draws; each batch's window indices, and
  torch.rand(4)'s bits at the end (the generator's state);
- `layer_norm`, `cross_entropy`, `transformer_block`: each backward alone, as bits;
- `small_models`: GPTModel of a small config (vocabulary 97, context 12, width 24, 4 heads, 2 layers),
  with and without qkv_bias, dropout 0.1 and 0 (training mode), the loss of calc_loss_batch and every
  `.grad` of model.named_parameters() as bits, then one AdamW step (lr 0.0004, weight_decay 0.1);
- `first_step`: his In [27]'s first step at GPT_CONFIG_124M (context 256): manual_seed(123), the model,
  the first batch of his shuffled loader, the loss, the SHA-256 of every `.grad` and of every parameter
  after optimizer.step().
"""

import hashlib
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, ROOT, code_cells, install_tiktoken, load_module  # noqa: E402
from oracle_common import arguments, provenance, write_json  # noqa: E402

SCRIPT = "tools/oracle/gpt_backward.py"
GPT_CONFIG_124M = {"vocab_size": 50257, "context_length": 256, "emb_dim": 768, "n_heads": 12,
                   "n_layers": 12, "drop_rate": 0.1, "qkv_bias": False}  # his In [2]


def bits(t):
    """float32 bits, row-major, as uint32."""
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def digest(t):
    """SHA-256 of a float32 tensor's bytes (row-major, little-endian)."""
    return hashlib.sha256(t.detach().contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def verdict_parts():
    """His In [20]: the first 90 % of The Verdict's characters and the rest."""
    text = open(os.path.join(ROOT, "data", "text", "the-verdict.txt"), encoding="utf-8").read()
    split_idx = int(0.90 * len(text))
    return text[:split_idx], text[split_idx:]


def randperm_cases():
    out = []
    for seed in (0, 123, 2**40 + 7, 18446744073709551557):
        for n in (1, 2, 9, 100):
            g = torch.Generator()
            g.manual_seed(seed)
            out.append({"seed": str(seed), "n": n, "perm": torch.randperm(n, generator=g).tolist(),
                        "then_randperm_9": torch.randperm(9, generator=g).tolist()})
    return out


def random64_cases():
    out = []
    for seed in (0, 123, 789):
        torch.manual_seed(seed)
        values = [int(torch.empty((), dtype=torch.int64).random_().item()) for _ in range(4)]
        out.append({"seed": seed, "values": [str(v) for v in values], "then_rand_bits": bits(torch.rand(2))})
    return out


def loader_cases(pc):
    train_data, val_data = verdict_parts()
    torch.manual_seed(123)
    train_loader = pc.create_dataloader_v1(train_data, batch_size=2, max_length=256, stride=256,
                                           drop_last=True, shuffle=True, num_workers=0)
    val_loader = pc.create_dataloader_v1(val_data, batch_size=2, max_length=256, stride=256,
                                         drop_last=False, shuffle=False, num_workers=0)
    windows = {tuple(x.tolist()): i for i, x in enumerate(train_loader.dataset.input_ids)}
    val_windows = {tuple(x.tolist()): i for i, x in enumerate(val_loader.dataset.input_ids)}
    events = []

    def run(name, loader, table, limit=None):
        order = []
        for i, (x, y) in enumerate(loader):
            if limit is not None and i >= limit:
                break
            order.append([table[tuple(row.tolist())] for row in x])
            assert torch.equal(x[:, 1:], y[:, :-1])
        events.append({"what": name, "batches": order})

    run("train, whole", train_loader, windows)
    run("train, cut after 1 batch", train_loader, windows, limit=1)
    run("val, whole", val_loader, val_windows)
    torch.nn.Dropout(0.1)(torch.ones(3, 5))  # 15 portable draws of 64 bits between the loops
    events.append({"what": "Dropout(0.1)(ones(3, 5)) in training mode", "batches": []})
    run("train, whole", train_loader, windows)
    run("train, cut after 5 batches", train_loader, windows, limit=5)
    run("val, cut after 5 batches", val_loader, val_windows, limit=5)
    return {"python": "manual_seed(123); his create_dataloader_v1 on train_data (batch_size=2, max_length=256, "
                      "stride=256, drop_last=True, shuffle=True) and val_data (drop_last=False, shuffle=False); "
                      "the loops below in order, each a new iterator; batches as window indices of the dataset",
            "train_windows": len(train_loader.dataset), "val_windows": len(val_loader.dataset),
            "first_window": train_loader.dataset.input_ids[0][:8].tolist(),
            "events": events, "then_rand_bits": bits(torch.rand(4))}


def layer_norm_case(pc):
    torch.manual_seed(31)
    ln = pc.LayerNorm(24)
    with torch.no_grad():
        ln.scale.copy_(torch.randn(24))
        ln.shift.copy_(torch.randn(24))
    x = (torch.randn(2, 5, 24) * 3 + 1).requires_grad_(True)
    g = torch.randn(2, 5, 24)
    y = ln(x)
    y.backward(g)
    return {"python": "manual_seed(31); ln = LayerNorm(24); scale, shift = randn(24), randn(24); "
                      "x = randn(2, 5, 24) * 3 + 1; g = randn(2, 5, 24); ln(x).backward(g)",
            "scale_bits": bits(ln.scale), "shift_bits": bits(ln.shift), "x_bits": bits(x), "g_bits": bits(g),
            "y_bits": bits(y), "x_grad_bits": bits(x.grad), "scale_grad_bits": bits(ln.scale.grad),
            "shift_grad_bits": bits(ln.shift.grad)}


def cross_entropy_case():
    torch.manual_seed(32)
    logits = (torch.randn(2, 3, 11) * 4).requires_grad_(True)
    targets = torch.randint(0, 11, (2, 3))
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    return {"python": "manual_seed(32); logits = randn(2, 3, 11) * 4; targets = randint(0, 11, (2, 3)); "
                      "cross_entropy(logits.flatten(0, 1), targets.flatten()).backward()",
            "logits_bits": bits(logits), "targets": targets.tolist(), "loss_bits": bits(loss.reshape(1)),
            "logits_grad_bits": bits(logits.grad)}


def small_config(qkv_bias, drop_rate):
    return {"vocab_size": 97, "context_length": 12, "emb_dim": 24, "n_heads": 4, "n_layers": 2,
            "drop_rate": drop_rate, "qkv_bias": qkv_bias}


def transformer_block_case(pc):
    cfg = small_config(True, 0.1)
    torch.manual_seed(33)
    block = pc.TransformerBlock(cfg)
    x = torch.randn(2, 7, 24).requires_grad_(True)
    g = torch.randn(2, 7, 24)
    y = block(x)  # training mode: dropout 0.1 on the weights and both shortcuts
    y.backward(g)
    return {"python": "manual_seed(33); block = TransformerBlock(cfg: width 24, 4 heads, qkv_bias, dropout 0.1); "
                      "x = randn(2, 7, 24); g = randn(2, 7, 24); block(x).backward(g) in training mode",
            "config": cfg, "x_bits": bits(x), "g_bits": bits(g), "y_bits": bits(y), "x_grad_bits": bits(x.grad),
            "grads": {name: bits(p.grad) for name, p in block.named_parameters()}}


def small_model_cases(pc, calc_loss_batch):
    out = []
    for qkv_bias, drop_rate in ((False, 0.1), (True, 0.0), (True, 0.1)):
        cfg = small_config(qkv_bias, drop_rate)
        torch.manual_seed(34)
        model = pc.GPTModel(cfg)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.0004, weight_decay=0.1)
        inputs = torch.randint(0, 97, (2, 12))
        targets = torch.randint(0, 97, (2, 12))
        model.train()
        optimizer.zero_grad()
        loss = calc_loss_batch(inputs, targets, model, "cpu")
        loss.backward()
        grads = {name: bits(p.grad) for name, p in model.named_parameters()}
        optimizer.step()
        out.append({"python": "manual_seed(34); model = GPTModel(cfg); optimizer = AdamW(model.parameters(), lr=0.0004, "
                              "weight_decay=0.1); inputs, targets = randint(0, 97, (2, 12)) twice; model.train(); "
                              "loss = calc_loss_batch(inputs, targets, model, 'cpu'); loss.backward(); optimizer.step()",
                    "config": cfg, "inputs": inputs.tolist(), "targets": targets.tolist(),
                    "loss_bits": bits(loss.reshape(1)), "grads": grads,
                    "after_step": {name: bits(p) for name, p in model.named_parameters()}})
    return out


def first_step_case(pc, calc_loss_batch):
    train_data, _ = verdict_parts()
    torch.manual_seed(123)  # his In [20]
    train_loader = pc.create_dataloader_v1(train_data, batch_size=2, max_length=256, stride=256,
                                           drop_last=True, shuffle=True, num_workers=0)
    torch.manual_seed(123)  # his In [27]
    model = pc.GPTModel(GPT_CONFIG_124M)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0004, weight_decay=0.1)
    model.train()
    input_batch, target_batch = next(iter(train_loader))
    optimizer.zero_grad()
    loss = calc_loss_batch(input_batch, target_batch, model, "cpu")
    loss.backward()
    grads = {name: digest(p.grad) for name, p in model.named_parameters()}
    optimizer.step()
    return {"python": "his In [20] and In [27] to the first optimizer.step(): manual_seed(123); train_loader; "
                      "manual_seed(123); model = GPTModel(GPT_CONFIG_124M); AdamW(lr=0.0004, weight_decay=0.1); "
                      "model.train(); the first batch of a new iterator; zero_grad; loss; backward; step",
            "first_window_ids": input_batch[:, :4].tolist(), "loss_bits": bits(loss.reshape(1)),
            "grads_sha256": grads,
            "after_step_sha256": {name: digest(p) for name, p in model.named_parameters()}}


def main():
    args = arguments(__doc__, "gpt_backward.json")
    torch.set_num_threads(1)
    install_tiktoken()
    pc = load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))

    # his In [24] (calc_loss_batch, calc_loss_loader), run from his export
    his = {"torch": torch}
    exec(code_cells(os.path.join(RASCHKA, "raschka_ch05.txt"), {24: 24})[24], his)
    calc_loss_batch = his["calc_loss_batch"]

    doc = {**provenance(SCRIPT, commit="b969b3ef7aac466cbbf9f3479c773e07d897c482"),
           "format": "float32 tensors as their bits (uint32, row-major) or the SHA-256 of their bytes "
                     "(little-endian, row-major); 64-bit integers as decimal strings; `python` says what was run.",
           "randperm": randperm_cases(), "random64": random64_cases(), "loader": loader_cases(pc),
           "layer_norm": layer_norm_case(pc), "cross_entropy": cross_entropy_case(),
           "transformer_block": transformer_block_case(pc),
           "small_models": small_model_cases(pc, calc_loss_batch),
           "first_step": first_step_case(pc, calc_loss_batch)}
    write_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
