#!/usr/bin/python3
"""Records chapter 23 in PyTorch: Raschka's GPT generating 200 tokens with and without his KV cache.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/generation.py

(about 5 minutes: most of it is the generation without the cache, which runs the whole context
through the model at every step). It runs his ch04/03_kv-cache/gpt_with_kv_cache.py
(tools/oracle/reference/kv_cache.py, his text) as its `main` does: `torch.manual_seed(123)`,
`GPTModel(GPT_CONFIG_124M)`, `model.eval()`, "Hello, I am" (ids 15496, 11, 314, 716, as his
chapter 4 In [30] prints them: tiktoken is not part of Debian), 200 new tokens by
`generate_text_simple_cached`, then the same by his gpt_ch04.py's `generate_text_simple` (no
cache), and writes
- data/sources/oracle/oracle_23_generation.txt: the run as a notebook's text export (`In [n]:`
  cells, the code, what it printed), read by tools/extract_book.py like the notebooks;
- data/oracle/generation.json: the ids and the SHA-256 of the float32 logits of the prefill and
  of the first decode steps, with and without the cache, for tests/test_gpt_model.cpp.
"""

import hashlib
import os
import sys

import torch
from oracle_common import arguments, export_cells, provenance, write_json
from reference import kv_cache

SCRIPT = "tools/oracle/generation.py"
RASCHKA_COMMIT = "28c65cdfbc3338e2e040016eea4b7fdf556e4d57"

CELLS = [
    """import torch
from gpt_with_kv_cache import GPTModel, generate_text_simple, generate_text_simple_cached
GPT_CONFIG_124M = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12,
                   "n_layers": 12, "drop_rate": 0.1, "qkv_bias": False}
torch.manual_seed(123)
model = GPTModel(GPT_CONFIG_124M)
model.eval()  # disable dropout
encoded_tensor = torch.tensor([[15496, 11, 314, 716]])  # "Hello, I am"
print("encoded_tensor.shape:", encoded_tensor.shape)""",
    """token_ids = generate_text_simple_cached(model=model, idx=encoded_tensor, max_new_tokens=200)
print("Output:", token_ids)
print("Output length:", len(token_ids[0]))""",
    """token_ids_no_cache = generate_text_simple(model=model, idx=encoded_tensor, max_new_tokens=200,
                                          context_size=GPT_CONFIG_124M["context_length"])
print("the same 200 tokens without the cache:", torch.equal(token_ids, token_ids_no_cache))""",
    """model.reset_kv_cache()
with torch.no_grad():
    logits_cached = [model(encoded_tensor, use_cache=True)[:, -1]]
    for t in range(4, 4 + 6):
        logits_cached.append(model(token_ids[:, t:t + 1], use_cache=True)[:, -1])
    logits_full = [model(token_ids[:, :t + 1])[:, -1] for t in range(3, 3 + 7)]
print("max |cached - recomputed| at the prefill and 6 decode steps:",
      [(c - f).abs().max().item() for c, f in zip(logits_cached, logits_full)])""",
]


def digest(t):
    """SHA-256 of a float32 tensor's bytes (row-major, little-endian)."""
    return hashlib.sha256(t.detach().contiguous().numpy().astype("<f4").tobytes()).hexdigest()


def main():
    args = arguments(__doc__, "generation.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    os.makedirs(args.sources, exist_ok=True)
    modules = {"gpt_with_kv_cache": {"GPTModel": kv_cache.GPTModel,
                                     "generate_text_simple": kv_cache.generate_text_simple,
                                     "generate_text_simple_cached": kv_cache.generate_text_simple_cached}}
    ns, _ = export_cells(
        os.path.join(args.sources, "oracle_23_generation.txt"),
        f"Text export of an oracle run for chapter 23 (generation with the KV cache): Raschka's "
        f"gpt_with_kv_cache.py (rasbt/LLMs-from-scratch ch04/03_kv-cache, commit {RASCHKA_COMMIT}; Apache "
        f"License 2.0, (c) Sebastian Raschka; imported from `gpt_with_kv_cache`), executed by {SCRIPT} with "
        f"Debian's {prov['debian_package']} (torch {prov['torch_version']}) on the reference BLAS, one "
        f"thread, {prov['date']}: code cells and their printed outputs, in order.", CELLS, modules)
    doc = {**prov,
           "format": "`prompt` and the ids generated with the cache (`cached_ids`, his "
                     "generate_text_simple_cached) and without it (`recomputed_ids`, his gpt_ch04.py's "
                     "generate_text_simple), 200 new tokens each; `step_logits_sha256[i]`: the SHA-256 of the "
                     "float32 logits [1, 50257] (little-endian) of the last position at step i, i = 0 the "
                     "prefill of the prompt, i = 1..6 the decode steps of the generated tokens 0..5 with the "
                     "cache; `recomputed_logits_sha256[i]` the same rows from a forward of the whole "
                     "sequence so far without the cache (cell 4 of oracle_23_generation.txt).",
           "prompt": ns["encoded_tensor"][0].tolist(),
           "cached_ids": ns["token_ids"][0].tolist(),
           "recomputed_ids": ns["token_ids_no_cache"][0].tolist(),
           "step_logits_sha256": [digest(t) for t in ns["logits_cached"]],
           "recomputed_logits_sha256": [digest(t) for t in ns["logits_full"]]}
    write_json(args.out, doc)
    print(f"wrote {args.out} and oracle_23_generation.txt in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
