"""Raschka's GPT with a KV cache (the ground truth of chapter 23 and of the generation benchmark's
PyTorch side): rasbt/LLMs-from-scratch ch04/03_kv-cache/gpt_with_kv_cache.py at commit
28c65cdfbc3338e2e040016eea4b7fdf556e4d57, loaded from the copy this project keeps,
data/sources/raschka/raschka_ch04_gpt_with_kv_cache.py, so that his file is the one text run.
Its `MultiHeadAttention` is his chapter 3 module with the cache added (`cache_k`, `cache_v`,
`ptr_current_pos`, `reset_cache`), `GPTModel` runs its blocks with `use_cache` and keeps
`current_pos`; `generate_text_simple` is his gpt_ch04.py's (greedy, no cache: the whole context
again at every step) and `generate_text_simple_cached` the README's. Its names repeat ch04.py's,
so it is imported as a module: `from reference import kv_cache`.

His script imports tiktoken for its `main` alone (the tokenizer of the prompt); Debian has no
tiktoken, so an empty module stands in for it while the file loads, and `main` is never called.
"""
# Copyright (c) Sebastian Raschka under Apache License 2.0 (attribution: data/sources/README.md).
import importlib.util
import os
import sys
import types

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                     "data", "sources", "raschka", "raschka_ch04_gpt_with_kv_cache.py")
_spec = importlib.util.spec_from_file_location("gpt_with_kv_cache", _PATH)
_module = importlib.util.module_from_spec(_spec)
_had_tiktoken = "tiktoken" in sys.modules
sys.modules.setdefault("tiktoken", types.ModuleType("tiktoken"))
try:
    _spec.loader.exec_module(_module)
finally:
    if not _had_tiktoken:
        del sys.modules["tiktoken"]

MultiHeadAttention = _module.MultiHeadAttention
LayerNorm = _module.LayerNorm
GELU = _module.GELU
FeedForward = _module.FeedForward
TransformerBlock = _module.TransformerBlock
GPTModel = _module.GPTModel
generate_text_simple = _module.generate_text_simple
generate_text_simple_cached = _module.generate_text_simple_cached
