#!/usr/bin/python3
"""Records Raschka's decoding strategies (ch05 §5.3: temperature, top-k, his `generate`) in PyTorch.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/decoding.py

(a few seconds). His cells In [30]-[33] and [35]-[40] run as his export writes them
(data/sources/raschka/raschka_ch05.txt, taken by tools/oracle/his_code.py by their line counts; nothing
is retyped), his GPTModel from his previous_chapters.py. It writes data/oracle/decoding.json with
provenance, for tests/test_decoding.cpp:
- `his_cells`: what his cells printed on Debian's torch (In [31], the sample counts of In [32], [35],
  [36], In [37]'s top-k, In [38], In [39]), his logits and the probabilities In [30] and [33] computed;
- `exponential`: the bits of `torch.empty(n).exponential_(lambd)` after `torch.manual_seed(seed)`, in
  float32 (uint32 bits) and float64 (uint64 bits), with the 32-bit draws the generator made;
- `multinomial`: probability tensors (1-D and 2-D), the seed, and the indices
  `torch.multinomial(probs, num_samples)` drew after `torch.manual_seed(seed)`;
- `topk`: inputs, k, and `torch.topk(x, k)`'s values and indices (ties and NaN included);
- `generate`: his `generate` (In [40]) on his GPTModel with a small config built after
  `torch.manual_seed(123)`, in evaluation mode: prompt, settings, seed and the ids it returned.
Float32 tensors are stored as their uint32 bits (JSON has no NaN or infinity), int64 ones as values.
"""

import contextlib
import io
import json
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, code_cells, install_tiktoken, load_module  # noqa: E402
from oracle_common import arguments, draws_since, provenance, write_json  # noqa: E402

SCRIPT = "tools/oracle/decoding.py"
COMMIT = "b969b3ef7aac466cbbf9f3479c773e07d897c482"  # his ch05.ipynb (as pretraining.py)
# His cells of §5.3 and their line counts (In [34] plots, In [41] needs his trained 124M model).
CELL_LINES = {30: 25, 31: 3, 32: 8, 33: 9, 35: 1, 36: 1, 37: 5, 38: 7, 39: 2, 40: 41}
SMALL_CONFIG = {"vocab_size": 50, "context_length": 16, "emb_dim": 32, "n_heads": 2, "n_layers": 2,
                "drop_rate": 0.0, "qkv_bias": False}


def bits32(t):
    return t.detach().contiguous().numpy().astype("<f4").view("<u4").reshape(-1).tolist()


def bits64(t):
    return t.detach().contiguous().numpy().astype("<f8").view("<u8").reshape(-1).tolist()


def rec(t):
    """A tensor as this file holds it: shape, and for float32 its values' uint32 bits (JSON has no
    NaN or infinity), for int64 its values; `repr` (what print(t) shows) up to 100 elements."""
    t = t.detach().contiguous()
    out = {"shape": list(t.shape)}
    if t.dtype == torch.long:
        out["values"] = t.reshape(-1).tolist()
    else:
        out["bits"] = bits32(t)
    if t.numel() <= 100:
        out["repr"] = repr(t)
    return out


def run_cells(cells):
    """Runs his cells in one namespace, as Jupyter would: {n: what it printed}, the namespace."""
    namespace = {"torch": torch}
    printed = {}
    for n, code in cells.items():
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"In [{n}]", "exec"), namespace)
        printed[n] = out.getvalue().rstrip("\n")
    return printed, namespace


def counts(printed):
    """The counts of his print_sampled_tokens output ("73 x closer" lines), in vocabulary order."""
    return [int(m.group(1)) for m in re.finditer(r"^(\d+) x \S+$", printed, re.M)]


def exponential_cases():
    cases = []
    for n, lambd, seed in ((64, 1.0, 123), (37, 2.5, 7)):
        for dtype, bits in ((torch.float32, bits32), (torch.float64, bits64)):
            torch.manual_seed(seed)
            t = torch.empty(n, dtype=dtype).exponential_(lambd)
            cases.append({"n": n, "lambd": lambd, "seed": seed, "dtype": str(dtype).replace("torch.", ""),
                          "bits": bits(t), "draws": draws_since(seed, torch.get_rng_state())})
    return cases


def multinomial_cases():
    cases = []
    gen = torch.Generator().manual_seed(2024)  # the inputs, drawn apart from the default generator
    inputs = {
        "2d_3x50": torch.softmax(torch.randn(3, 50, generator=gen) * 2.0, dim=-1),
        "1d_50": torch.softmax(torch.randn(50, generator=gen), dim=-1),
        "2d_unnormalised": torch.rand(4, 9, generator=gen) * 7.0,
        "2d_zeros": torch.tensor([[0.0, 0.25, 0.0, 0.75], [0.5, 0.0, 0.5, 0.0]]),
        "1d_ties": torch.tensor([0.5, 0.5, 0.0, 0.0]),
    }
    for name, probs in inputs.items():
        for num_samples in (1, 3):
            for seed in (0, 1, 123, 2024):
                torch.manual_seed(seed)
                idx = torch.multinomial(probs, num_samples)
                cases.append({"name": name, "probs": rec(probs), "num_samples": num_samples, "seed": seed,
                              "indices": rec(idx), "draws": draws_since(seed, torch.get_rng_state())})
    return cases


def topk_cases():
    gen = torch.Generator().manual_seed(5)
    long_ties = torch.round(torch.randn(300, generator=gen) * 4.0) / 4.0  # many equal values
    inputs = [
        ("his_logits", torch.tensor([4.51, 0.89, -1.90, 6.75, 1.63, -1.62, -1.89, 6.28, 1.79]), 3),
        ("ties_nan", torch.tensor([1.0, float("nan"), 3.0, 3.0, 1.0, -float("inf"), 3.0]), 4),
        ("ties_all", torch.tensor([2.0] * 11), 5),
        ("long_ties_partial_sort", long_ties, 4),     # k * 64 <= n: std::partial_sort
        ("long_ties_nth_element", long_ties, 9),      # k * 64 > n: std::nth_element, then std::sort
        ("rows_2x7", torch.tensor([[0.5, -1.0, 0.5, 2.0, 2.0, 0.0, -3.0], [9.0, 8.0, 7.0, 9.0, 1.0, 8.0, 0.0]]), 3),
        ("k_equals_n", torch.tensor([0.1, -0.2, 0.3, 0.3]), 4),
        ("k_zero", torch.tensor([0.1, -0.2, 0.3]), 0),
    ]
    cases = []
    for name, x, k in inputs:
        values, indices = torch.topk(x, k)
        cases.append({"name": name, "x": rec(x), "k": k, "values": rec(values), "indices": rec(indices)})
    try:
        torch.topk(torch.tensor([1.0, 2.0]), 3)
    except RuntimeError as e:
        error = str(e)
    return cases, error


def generate_cases(generate):
    install_tiktoken()  # his previous_chapters.py imports tiktoken (not part of Debian); unused here
    previous = load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))
    torch.manual_seed(123)
    model = previous.GPTModel(SMALL_CONFIG)
    model.eval()
    prompt = torch.tensor([[7, 21, 3, 44]])
    batch = torch.tensor([[7, 21, 3, 44], [0, 49, 12, 12]])
    settings = [  # (name, idx, max_new_tokens, context_size, temperature, top_k, seed)
        ("greedy", prompt, 20, 16, 0.0, None, 123),
        ("top5_t1.4", prompt, 20, 16, 1.4, 5, 123),
        ("t1.0", prompt, 20, 16, 1.0, None, 123),
        ("top3_t0.5", prompt, 20, 16, 0.5, 3, 123),
        ("top25_t1.4_seed7_ctx5", prompt, 15, 5, 1.4, 25, 7),
        ("top50_t2.0", prompt, 12, 16, 2.0, 50, 1),
        ("top1_t1.0", prompt, 8, 16, 1.0, 1, 123),
        ("greedy_top4", prompt, 8, 16, 0.0, 4, 123),
        ("batch2_greedy", batch, 10, 16, 0.0, None, 123),
        ("batch2_t0.8", batch, 10, 16, 0.8, None, 123),
    ]
    cases = []
    for name, idx, n, ctx, temperature, top_k, seed in settings:
        torch.manual_seed(seed)
        out = generate(model, idx, n, ctx, temperature=temperature, top_k=top_k)
        cases.append({"name": name, "idx": rec(idx), "max_new_tokens": n, "context_size": ctx,
                      "temperature": temperature, "top_k": top_k, "eos_id": None, "seed": seed,
                      "out": rec(out), "draws": draws_since(seed, torch.get_rng_state())})
    # eos_id: the token the sampled run above drew 4th (its first occurrence) stops the same run there
    base = next(c for c in cases if c["name"] == "top5_t1.4")
    new = base["out"]["values"][4:]
    eos = new[3]
    torch.manual_seed(base["seed"])
    out = generate(model, prompt, base["max_new_tokens"], 16, temperature=1.4, top_k=5, eos_id=eos)
    assert out.shape[1] == 4 + new.index(eos), "stops where eos_id was drawn"
    cases.append({"name": "top5_t1.4_eos", "idx": rec(prompt), "max_new_tokens": base["max_new_tokens"],
                  "context_size": 16, "temperature": 1.4, "top_k": 5, "eos_id": eos, "seed": base["seed"],
                  "out": rec(out), "draws": draws_since(base["seed"], torch.get_rng_state())})
    with torch.no_grad():
        prompt_logits = model(prompt)[:, -1, :]
    return cases, rec(prompt_logits)


def main():
    args = arguments(__doc__, "decoding.json")
    torch.set_num_threads(1)
    cells = code_cells(os.path.join(RASCHKA, "raschka_ch05.txt"), CELL_LINES)
    printed, ns = run_cells(cells)
    his = {
        "printed": {f"In [{n}]": printed[n] for n in cells if printed[n]},
        "next_token_logits": rec(ns["next_token_logits"]),
        "temperatures": ns["temperatures"],
        "probas": rec(ns["probas"]),
        "scaled_probas": [rec(p) for p in ns["scaled_probas"]],
        "sample_counts": {"In [32]": counts(printed[32]), "In [35]": counts(printed[35]),
                          "In [36]": counts(printed[36])},
        "top_logits": rec(ns["top_logits"]),
        "top_pos": rec(ns["top_pos"]),
        "new_logits": rec(ns["new_logits"]),
        "topk_probas": rec(ns["topk_probas"]),
    }
    topk, topk_error = topk_cases()
    generated, prompt_logits = generate_cases(ns["generate"])
    doc = {**provenance(SCRIPT, commit=COMMIT),
           "format": "every float32 tensor as `bits` (uint32, row-major), int64 as `values`; his_cells: his cells "
                     "In [30]-[40] of ch05 (printed text, the counts of print_sampled_tokens in vocabulary order); "
                     "exponential: `bits` of torch.empty(n, dtype).exponential_(lambd) after manual_seed(seed) "
                     "(uint32 of float32, uint64 of float64), `draws` the 32-bit draws made since the seed; "
                     "multinomial: `indices` of torch.multinomial(probs, num_samples) after manual_seed(seed); "
                     "topk: torch.topk(x, k); "
                     "generate: his In [40] on his GPTModel(small_config) built after manual_seed(123), eval mode, "
                     "torch.manual_seed(seed) before each call; prompt_logits: that model's logits at the last "
                     "position of the generate cases' prompt [[7, 21, 3, 44]]",
           "his_cells": his,
           "exponential": exponential_cases(),
           "multinomial": multinomial_cases(),
           "topk": topk,
           "topk_error_k_too_large": topk_error,
           "small_config": SMALL_CONFIG,
           "generate": generated,
           "prompt_logits": prompt_logits}
    json.dumps(doc, allow_nan=False)  # every float is stored as bits: no NaN or Infinity in the file
    write_json(args.out, doc)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
