"""The attention benchmark's table: one entry per (module, configuration).

Each entry pairs three sides that compute the same function with the same weights:
- the library: `benchmarks/module_benchmark`'s case `forward/<key>`, which builds the module
  from its config after `attn::manual_seed(0)`, draws `x = attn::rand({1, T, d})` and times
  the module's `operator()`;
- PyTorch: Raschka's class (written out once, in tools/oracle/), built after
  `torch.manual_seed(0)` with the same arguments, `x = torch.rand(1, T, d)`, timed under
  `torch.no_grad()` in evaluation mode (benchmarks/peers/torch_side.py);
- ONNX Runtime (optional): models built from that PyTorch module's weights
  (benchmarks/peers/onnx_models.py), timed by benchmarks/peers/onnxruntime/run.mjs.

Adding a module is one entry here, one line in benchmarks/cpp/module_benchmark.cpp's table (the
same key) and its class in tools/oracle/ (or an ONNX builder in onnx_models.py for a new
fused operator). Python 3 standard library only: the driver imports this without PyTorch.
"""
from dataclasses import dataclass, field

D, H = 768, 12  # GPT-2 small: d_in = d_out = 768, 12 heads of 64
SEED = 0        # torch.manual_seed / attn::manual_seed before the module, then x


@dataclass(frozen=True)
class Entry:
    key: str               # the library's case is forward/<key>; also the data's key
    title: str             # what the page calls it
    source: str            # where the PyTorch class comes from
    torch_class: str       # "module:Class" in tools/oracle/
    torch_args: dict       # keyword arguments (T stands for the token count)
    flops: str             # how the GFLOP/s credit is counted (see flops())
    ort: tuple = ()        # ONNX Runtime variants (onnx_models.VARIANTS)
    sizes: tuple = (1024,)
    threads: tuple = (1, 2)
    notes: str = ""
    extra: dict = field(default_factory=dict)


ENTRIES = [
    Entry("mha", "MultiHeadAttention", "Raschka ch. 3.6.2",
          "multihead:MultiHeadAttention",
          dict(d_in=D, d_out=D, context_length="T", dropout=0.0, num_heads=H),
          flops="mha", ort=("exported", "attention", "mha", "gqa"),
          sizes=(256, 1024, 4096), threads=(1, 2),
          notes="12 heads of 64, causal, out_proj with bias"),
    Entry("gqa", "GroupedQueryAttention", "Raschka ch04/04_gqa",
          "gqa_swa:GroupedQueryAttention",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H, num_kv_groups=4),
          flops="gqa", ort=("exported", "gqa"), sizes=(1024,), threads=(1, 2),
          notes="12 query heads share 4 key/value heads; out_proj without bias",
          extra={"num_kv_heads": 4}),
    Entry("causal", "CausalAttention", "Raschka ch. 3.5.3",
          "multihead:CausalAttention",
          dict(d_in=D, d_out=D, context_length="T", dropout=0.0),
          flops="causal", ort=("exported", "attention"), sizes=(1024,), threads=(1, 2),
          notes="one head of 768 (the class has no heads); no output projection"),
    Entry("wrapper", "MultiHeadAttentionWrapper", "Raschka ch. 3.6.1",
          "multihead:MultiHeadAttentionWrapper",
          dict(d_in=D, d_out=D // H, context_length="T", dropout=0.0, num_heads=H),
          flops="wrapper", ort=("exported",), sizes=(1024,), threads=(1, 2),
          notes="12 CausalAttention heads of 64, concatenated; no output projection"),
    Entry("gpt2", "GPT2Attention", "notebook 003 (nanoGPT's CausalSelfAttention)",
          "multihead:GPT2Attention",
          dict(n_embd=D, n_head=H, block_size="T", dropout=0.0, bias=True),
          flops="mha", ort=("exported", "attention"), sizes=(1024,), threads=(1, 2),
          notes="fused c_attn, c_proj, biases as GPT-2 has them"),
    Entry("swa", "MultiHeadAttentionWithSWA", "Raschka ch04/06_swa",
          "gqa_swa:MultiHeadAttentionWithSWA",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H, sliding_window_size=256),
          flops="swa", ort=("exported", "gqa"), sizes=(1024,), threads=(1, 2),
          notes="window 256: each query sees itself and the 255 keys before it",
          extra={"window": 256}),
    Entry("mla", "MultiHeadLatentAttention", "Raschka ch04/05_mla",
          "mla_sharing:MultiHeadLatentAttention",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H),
          flops="mla", sizes=(1024,), threads=(1, 2),
          notes="latent_dim None: max(16, 768 // 8) = 96; keys and values rebuilt from the latent",
          extra={"latent_dim": 96}),
    Entry("kv_sharing", "MultiHeadAttentionWithKVSharing", "Raschka ch04/10_kv-sharing",
          "mla_sharing:MultiHeadAttentionWithKVSharing",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H),
          flops="mha", sizes=(1024,), threads=(1, 2),
          notes="one producer layer (shared_kv=None): multi-head attention that hands on its keys and values"),
    Entry("dsa", "MultiHeadAttentionWithDSA", "Raschka ch04/09_dsa (a contributor's pull request)",
          "dsa:MultiHeadAttentionWithDSA",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H, index_n_heads=4, index_head_dim=64, topk=64),
          flops="dsa", sizes=(1024,), threads=(1, 2),
          notes="a lightning indexer of 4 heads of 64 picks 64 keys per query; out_proj with bias",
          extra={"index_n_heads": 4, "index_head_dim": 64, "topk": 64}),
    Entry("deltanet", "GatedDeltaNet", "Raschka ch04/08_deltanet (with its fix of the output gate)",
          "deltanet:GatedDeltaNet",
          dict(d_in=D, d_out=D, dropout=0.0, num_heads=H),
          flops="deltanet", sizes=(1024,), threads=(1, 2),
          notes="the gated delta rule token by token, 12 heads of 64; RMSNorm, SiLU gate"),
    Entry("gated", "GatedMultiHeadAttention", "Raschka ch04/08_deltanet",
          "deltanet:GatedMultiHeadAttention",
          dict(d_in=D, d_out=D, context_length="T", dropout=0.0, num_heads=H),
          flops="gated", sizes=(1024,), threads=(1, 2),
          notes="12 heads of 64, causal, a sigmoid gate before out_proj"),
]

BY_KEY = {e.key: e for e in ENTRIES}


def torch_kwargs(entry, T):
    """The class's keyword arguments with the token count filled in."""
    return {k: (T if v == "T" else v) for k, v in entry.torch_args.items()}


def visible_pairs(T, window=None):
    """Query/key pairs a causal (or windowed) mask lets through."""
    if window is None or window >= T:
        return T * (T + 1) / 2
    return window * (window + 1) / 2 + (T - window) * window


def flops(entry, T):
    """Floating-point operations credited to one forward, the same for every side: 2 per
    multiply-add of the projections, and the two attention products (scores, weights @
    values) on their visible query/key pairs only. Softmax is not counted."""
    hd = D // H
    if entry.flops == "mha":        # q, k, v, out: 4 products [T, D] x [D, D]
        return 4 * 2 * T * D * D + 2 * H * 2 * hd * visible_pairs(T)
    if entry.flops == "gqa":        # q and out full; k, v to 4 heads of 64
        kv = entry.extra["num_kv_heads"] * hd
        return 2 * 2 * T * D * D + 2 * 2 * T * D * kv + 2 * H * 2 * hd * visible_pairs(T)
    if entry.flops == "swa":
        w = entry.extra["window"]
        return 4 * 2 * T * D * D + 2 * H * 2 * hd * visible_pairs(T, w)
    if entry.flops == "mla":        # q, out [D, D]; down to L; W_UK, W_UV from L to D
        L = entry.extra["latent_dim"]
        return 2 * 2 * T * D * D + 2 * T * D * L + 2 * 2 * T * L * D + 2 * H * 2 * hd * visible_pairs(T)
    if entry.flops == "causal":     # q, k, v; one head of D
        return 3 * 2 * T * D * D + 2 * 2 * D * visible_pairs(T)
    if entry.flops == "wrapper":    # 12 heads x (q, k, v to 64) = 3 products to D
        return 3 * 2 * T * D * D + 2 * H * 2 * hd * visible_pairs(T)
    if entry.flops == "gated":      # q, gate, k, v, out
        return 5 * 2 * T * D * D + 2 * H * 2 * hd * visible_pairs(T)
    if entry.flops == "dsa":        # mha's projections, the indexer's, its scores, top-k attention
        hi, di, k = entry.extra["index_n_heads"], entry.extra["index_head_dim"], entry.extra["topk"]
        index = 2 * T * D * (hi * di + di + hi) + 2 * hi * di * visible_pairs(T)
        return 4 * 2 * T * D * D + index + 2 * H * 2 * hd * visible_pairs(T, k)
    if entry.flops == "deltanet":   # q, k, v, gate, beta, out; alpha; 3 state products per token
        return 6 * 2 * T * D * D + 2 * T * D * H + H * T * 3 * 2 * hd * hd
    raise ValueError(f"unknown flop count {entry.flops!r}")
