"""The reference implementations: every PyTorch module the oracle scripts record, written once
here and imported by every script that runs it (`from reference import MultiHeadAttention`;
tools/benchmark/ builds the same classes through the scripts that import them).

One module per upstream source, each naming its file and commit in its docstring: ch03
(Raschka's chapter 3), ch04 (his chapter 4: the GPT model), kv_cache (his ch04/03_kv-cache
script, imported as a module: its names repeat ch04's), notebooks (the source notebooks' own
classes), gqa, swa, mla, kv_sharing, memory_estimators, dsa, deltanet, llama (RoPE and
Raschka's Llama modules), alibi, positional_encoding; and seq2seq, chapter 25's model (this
project's own, around torch.nn.MultiheadAttention). They are the ground truth, so they keep their
author's text; what differs is listed in the module's docstring, and a changed line is marked
`# edit:`.

On import, the classes (and functions) copied character for character are checked against the project's copies
of their sources under data/sources/, so that their text cannot drift: a class must be its
author's block there, line for line, except lines marked `# edit:`, each of which must be one of
his lines, moved.
"""
import inspect
import os

from . import llama
from .alibi import MultiHeadAttentionALiBi, alibi_bias, get_slopes
from . import kv_cache
from .ch03 import CausalAttention, MultiHeadAttention, MultiHeadAttentionCombinedQKV, MultiHeadAttentionWrapper
from .ch04 import (GELU, DummyGPTModel, DummyLayerNorm, DummyTransformerBlock, ExampleDeepNeuralNetwork,
                   FeedForward, GPTModel, LayerNorm, TransformerBlock, generate_text_simple, print_gradients)
from .deltanet import GatedDeltaNet, GatedMultiHeadAttention, RMSNorm, l2norm
from .dsa import LightningIndexer, MultiHeadAttentionWithDSA, select
from .gqa import GroupedQueryAttention
from .kv_sharing import MultiHeadAttentionWithKVSharing
from .memory_estimators import mla_estimator_main, sharing_estimator_main
from .mla import MultiHeadLatentAttention
from .llama import compute_rope, precompute_rope_params, rope_inv_freq
from .notebooks import GPT2Attention, MultiHeadAtt
from .positional_encoding import PositionalEncoding
from .seq2seq import AttentionOnlySeq2Seq, copy_batch, cross_attention_weights, greedy_decode
from .swa import MultiHeadAttentionWithSWA

__all__ = ["CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "MultiHeadAttentionCombinedQKV",
           "MultiHeadAtt", "GPT2Attention", "GroupedQueryAttention", "MultiHeadAttentionWithSWA",
           "MultiHeadLatentAttention", "MultiHeadAttentionWithKVSharing", "mla_estimator_main",
           "sharing_estimator_main", "LightningIndexer", "MultiHeadAttentionWithDSA", "select",
           "GatedMultiHeadAttention", "GatedDeltaNet", "RMSNorm", "l2norm", "llama", "compute_rope",
           "precompute_rope_params", "rope_inv_freq", "get_slopes", "alibi_bias", "MultiHeadAttentionALiBi",
           "PositionalEncoding", "AttentionOnlySeq2Seq", "copy_batch", "cross_attention_weights",
           "greedy_decode", "DummyGPTModel", "DummyTransformerBlock", "DummyLayerNorm", "LayerNorm", "GELU",
           "FeedForward", "ExampleDeepNeuralNetwork", "print_gradients", "TransformerBlock", "GPTModel",
           "generate_text_simple", "kv_cache"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VERBATIM = {
    "data/sources/raschka/raschka_ch03.txt": (CausalAttention, MultiHeadAttentionWrapper, MultiHeadAttention),
    "data/sources/seeds/004_d8a07657e05181d5.txt": (MultiHeadAtt,),
    "data/sources/raschka/raschka_gpt_to_llama2.txt": (llama.compute_rope, llama.MultiHeadAttention),
    "data/sources/raschka/raschka_llama2_to_llama3.txt": (llama.precompute_rope_params, llama.GroupedQueryAttention),
    "data/sources/raschka/raschka_ch04.txt": (DummyGPTModel, DummyTransformerBlock, DummyLayerNorm, LayerNorm,
                                              GELU, FeedForward, ExampleDeepNeuralNetwork, print_gradients,
                                              TransformerBlock, GPTModel, generate_text_simple),
    # kv_cache: loaded from data/sources/raschka/raschka_ch04_gpt_with_kv_cache.py itself.
}


def source_block(text, name):
    """The block of `class name(` (or `def name(`) in a text export: its lines up to the first one
    that is neither blank nor indented, without trailing blank lines."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith((f"class {name}(", f"def {name}(")))
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] == " "):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def check_verbatim():
    """Raises RuntimeError naming the class and the file if a class of VERBATIM is no longer
    written as the text export it was copied from writes it (but for moved lines marked
    `# edit:`)."""
    for path, classes in VERBATIM.items():
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = f.read()
        for cls in classes:
            his = source_block(text, cls.__name__)
            ours = inspect.getsource(cls).rstrip("\n").split("\n")
            for line in [line for line in ours if "  # edit:" in line]:
                moved = line.split("  # edit:")[0]
                if moved not in his:
                    raise RuntimeError(f"{inspect.getsourcefile(cls)}: {cls.__name__}'s edited line "
                                       f"{moved.strip()!r} is not one of {path}'s")
                his.remove(moved)
                ours.remove(line)
            if ours != his:
                raise RuntimeError(f"{inspect.getsourcefile(cls)}: {cls.__name__} is no longer "
                                   f"written as {path} writes it")

check_verbatim()
