#!/usr/bin/python3
"""Records chapter 25 in PyTorch: torch.nn.MultiheadAttention as cross-attention, and an encoder-decoder trained on the copy task.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, as multihead.py:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/cross_attention.py

It writes
- data/sources/oracle/oracle_25_cross_attention.txt: the run as a notebook's text export (`In [n]:`
  cells, the code as executed, what it printed), which tools/extract_book.py reads like the
  notebooks, so that chapter 25's printed blocks are compared with it;
- data/oracle/cross_attention.json: float32 bits, with provenance, for tests/test_cross_attention.cpp:
  `cases`, PyTorch's own nn.MultiheadAttention forward and backward in every layout the
  library offers (cross-attention with padding, causal self-attention, dropout in training,
  kdim/vdim with add_bias_kv and add_zero_attn sequence-first, three distinct inputs with a 3-D
  mask, a larger cross-attention with a causal [L, S] mask), each drawn after its seed: the
  parameters, inputs, outputs, weights and every gradient of `(attn_output * grad_output).sum()`;
  `training`, every step's loss of the export's two training runs and the parameters after them.

The module is PyTorch's own class (its outputs are the oracle); the encoder-decoder around it is
this project's (tools/oracle/reference/seq2seq.py). Every module stays in training mode (dropout
0 but where asked): PyTorch 1.13 then takes the math path of F.multi_head_attention_forward,
which the library follows (its eval-mode "fast path", torch._native_multi_head_attention, is
another computation).
"""

import os
import sys

import numpy as np
import torch
from oracle_common import arguments, export_cells, provenance, write_json
from reference import AttentionOnlySeq2Seq, copy_batch, cross_attention_weights, greedy_decode

SCRIPT = "tools/oracle/cross_attention.py"

CELLS = [
    """import torch
torch.manual_seed(123)
mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
decoder_x = torch.rand(2, 3, 8)
memory = torch.rand(2, 5, 8)
key_padding_mask = torch.tensor([[False, False, False, False, False], [False, False, False, True, True]])""",
    """print(mha)""",
    """print([(name, tuple(p.shape)) for name, p in mha.named_parameters()])""",
    """attn_output, attn_weights = mha(decoder_x, memory, memory, key_padding_mask=key_padding_mask)
print(attn_output)""",
    """print(attn_weights)""",
    """_, per_head = mha(decoder_x, memory, memory, key_padding_mask=key_padding_mask, average_attn_weights=False)
print(per_head)""",
    """causal = torch.triu(torch.ones(3, 3, dtype=torch.bool), diagonal=1)
self_output, self_weights = mha(decoder_x, decoder_x, decoder_x, attn_mask=causal)
print(self_output)""",
    """print(self_weights)""",
    """torch.manual_seed(123)
mha_dropout = torch.nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
dropout_output, dropout_weights = mha_dropout(decoder_x, memory, memory, key_padding_mask=key_padding_mask)
print(dropout_weights)""",
    """print(dropout_output)""",
    """all_padded = torch.tensor([[False, False, False, False, False], [True, True, True, True, True]])
padded_output, padded_weights = mha(decoder_x, memory, memory, key_padding_mask=all_padded)
print(padded_output)""",
    """print(padded_weights)""",
    """torch.manual_seed(123)
mha_kv = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=4, batch_first=True)
print([(name, tuple(p.shape)) for name, p in mha_kv.named_parameters()])""",
    """memory_k = torch.rand(2, 5, 6)
memory_v = torch.rand(2, 5, 4)
print(mha_kv(decoder_x, memory_k, memory_v, key_padding_mask=key_padding_mask)[0])""",
    """from seq2seq import AttentionOnlySeq2Seq, copy_batch, cross_attention_weights, greedy_decode
V, LENGTH = 11, 10
def train(reverse, steps=200):
    torch.manual_seed(123)
    model = AttentionOnlySeq2Seq(vocab_size=V, context_length=LENGTH, emb_dim=32, num_heads=2)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    losses = []
    for step in range(steps):
        src, tgt = copy_batch(32, V, LENGTH, reverse)
        logits = model(src, tgt[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
        if step % 20 == 0 or step == steps - 1:
            print(f"step {step:3d}: loss {loss.item():.4f}")
    return model, losses""",
    """copy_model, copy_losses = train(reverse=False)""",
    """reverse_model, reverse_losses = train(reverse=True)""",
    """def exact_sequences(model, reverse, n=1000):
    src, tgt = copy_batch(n, V, LENGTH, reverse, generator=torch.Generator().manual_seed(2024))
    decoded = greedy_decode(model, src, LENGTH)
    return (decoded == tgt).all(dim=1).sum().item()
print(f"copy: {exact_sequences(copy_model, False)} of 1000 held-out sequences decoded exactly",
      f"reversal: {exact_sequences(reverse_model, True)} of 1000 held-out sequences decoded exactly", sep="\\n")""",
    """src, tgt = copy_batch(1, V, LENGTH, generator=torch.Generator().manual_seed(2024))
print(cross_attention_weights(copy_model, src, tgt[:, :-1])[0])""",
    """src, tgt = copy_batch(1, V, LENGTH, reverse=True, generator=torch.Generator().manual_seed(2024))
print(cross_attention_weights(reverse_model, src, tgt[:, :-1])[0])""",
]


def bits(t):
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def tensor_record(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bool:
        return {"shape": list(t.shape), "bool": t.reshape(-1).tolist()}
    return {"shape": list(t.shape), "bits": bits(t)}


def draw_mask(spec):
    """A mask as the case's spec draws it: ("rand_lt", shape, p): torch.rand(shape) < p;
    ("randn", shape): a float mask torch.randn(shape); ("triu", L, S): the causal [L, S] mask
    (no draws); ("rows", [[...], ...]): a literal boolean tensor (no draws)."""
    kind = spec[0]
    if kind == "rand_lt":
        return torch.rand(*spec[1]) < spec[2]
    if kind == "randn":
        return torch.randn(*spec[1])
    if kind == "triu":
        return torch.triu(torch.ones(spec[1], spec[2], dtype=torch.bool), diagonal=1)
    return torch.tensor(spec[1])


def mha_case(name, python, seed, module_args, shapes, kpm=None, attn_mask=None, need_weights=True,
             average=True, self_attention=False, key_is_value=True, pokes=()):
    """One call of nn.MultiheadAttention and its backward, everything drawn after `seed` in this
    order: the module, the inputs (rand: query, then key (unless self-attention), then value
    (unless it is the key)), key_padding_mask then attn_mask (draw_mask), the forward (its
    dropout), then grad_output (randn). `pokes`: (tensor, index, value) set after the draws
    (tensor "query", "key", "value" or "grad_output"), for values rand and randn never give."""
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(**module_args)
    query = torch.rand(*shapes[0])
    key = query if self_attention else torch.rand(*shapes[1])
    value = key if (self_attention or key_is_value) else torch.rand(*shapes[2])
    for tensor, index, v in pokes:
        if tensor != "grad_output":
            {"query": query, "key": key, "value": value}[tensor][tuple(index)] = v
    kpm_t = draw_mask(kpm) if kpm else None
    mask_t = draw_mask(attn_mask) if attn_mask else None
    for t in {id(query): query, id(key): key, id(value): value}.values():
        t.requires_grad_()
    out, weights = mha(query, key, value, key_padding_mask=kpm_t, need_weights=need_weights, attn_mask=mask_t,
                       average_attn_weights=average)
    grad_output = torch.randn(*out.shape)
    for tensor, index, v in pokes:
        if tensor == "grad_output":
            grad_output[tuple(index)] = v
    (out * grad_output).sum().backward()
    rec = {"name": name, "python": python, "seed": seed, "module": dict(module_args),
           "self_attention": self_attention, "key_is_value": self_attention or key_is_value,
           "need_weights": need_weights, "average_attn_weights": average,
           "params": {n: tensor_record(p) for n, p in mha.named_parameters()},
           "grads": {n: tensor_record(p.grad) for n, p in mha.named_parameters()},
           "query": tensor_record(query), "key": tensor_record(key), "value": tensor_record(value),
           "attn_output": tensor_record(out), "grad_output": tensor_record(grad_output),
           "query_grad": tensor_record(query.grad)}
    if not self_attention:
        rec["key_grad"] = tensor_record(key.grad)
        if not key_is_value:
            rec["value_grad"] = tensor_record(value.grad)
    if weights is not None:
        rec["attn_output_weights"] = tensor_record(weights)
    if pokes:
        rec["pokes"] = [{"tensor": t, "index": list(i), "bits": bits(torch.tensor([v], dtype=torch.float32))[0]}
                        for t, i, v in pokes]
    if kpm_t is not None:
        rec["key_padding_mask"] = {**tensor_record(kpm_t), "draw": list(kpm)}
    if mask_t is not None:
        rec["attn_mask"] = {**tensor_record(mask_t), "draw": list(attn_mask)}
    return rec


def cases():
    pad = ("rows", [[False] * 5, [False, False, False, True, True]])
    return [
        mha_case("cross_padded", "MultiheadAttention(8, 2, batch_first=True); query rand(2, 3, 8), memory rand(2, 5, 8) "
                 "as key and value, the last two of sequence 1 padded",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8), (2, 5, 8)], kpm=pad),
        mha_case("cross_padded_per_head", "the same, average_attn_weights=False",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8), (2, 5, 8)], kpm=pad, average=False),
        mha_case("self_causal", "MultiheadAttention(8, 2, batch_first=True) as causal self-attention on rand(2, 3, 8)",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8)], self_attention=True,
                 attn_mask=("triu", 3, 3)),
        mha_case("dropout", "MultiheadAttention(8, 2, dropout=0.5, batch_first=True) in training, cross-attention "
                 "with padding",
                 123, dict(embed_dim=8, num_heads=2, dropout=0.5, batch_first=True), [(2, 3, 8), (2, 5, 8)], kpm=pad),
        mha_case("separate_seq_first", "MultiheadAttention(8, 4, add_bias_kv=True, add_zero_attn=True, kdim=6, vdim=5) "
                 "sequence-first, boolean attn_mask and key_padding_mask, per-head weights",
                 0, dict(embed_dim=8, num_heads=4, add_bias_kv=True, add_zero_attn=True, kdim=6, vdim=5),
                 [(4, 3, 8), (7, 3, 6), (7, 3, 5)], key_is_value=False, average=False,
                 kpm=("rand_lt", (3, 7), 0.3), attn_mask=("rand_lt", (4, 7), 0.2)),
        mha_case("separate_batch_first", "MultiheadAttention(16, 2, kdim=24, vdim=24, batch_first=True), key and value "
                 "one tensor, 20 sequences (the key bias's sum over a strided gradient)",
                 4, dict(embed_dim=16, num_heads=2, kdim=24, vdim=24, batch_first=True),
                 [(20, 3, 16), (20, 9, 24)], kpm=("rand_lt", (20, 9), 0.2)),
        mha_case("three_inputs_3d_mask", "MultiheadAttention(16, 4, batch_first=True), query, key and value distinct, "
                 "a 3-D boolean attn_mask [B * H, L, S]",
                 1, dict(embed_dim=16, num_heads=4, batch_first=True), [(2, 9, 16), (2, 20, 16), (2, 20, 16)],
                 key_is_value=False, attn_mask=("rand_lt", (8, 9, 20), 0.3)),
        mha_case("three_inputs_seq_first", "MultiheadAttention(16, 4), sequence-first, query, key and value distinct",
                 5, dict(embed_dim=16, num_heads=4), [(9, 3, 16), (12, 3, 16), (12, 3, 16)], key_is_value=False),
        mha_case("larger_causal_rect", "MultiheadAttention(32, 4, bias=False, batch_first=True), L = 17 queries, "
                 "S = 29 keys, causal [L, S] mask and padding, no weights",
                 2, dict(embed_dim=32, num_heads=4, bias=False, batch_first=True), [(2, 17, 32), (2, 29, 32)],
                 need_weights=False, kpm=("rand_lt", (2, 29), 0.2), attn_mask=("triu", 17, 29)),
        mha_case("self_unpacked_bias_kv", "MultiheadAttention(12, 3, dropout=0.25, add_bias_kv=True, batch_first=True) "
                 "as self-attention in training",
                 3, dict(embed_dim=12, num_heads=3, dropout=0.25, add_bias_kv=True, batch_first=True), [(4, 6, 12)],
                 self_attention=True),
        mha_case("float_mask", "MultiheadAttention(32, 2, batch_first=True), a float attn_mask [L, S] added to the "
                 "scores, 12 x 25 x 16 = 4800 multiply-adds per head (PyTorch adds the mask after the products)",
                 6, dict(embed_dim=32, num_heads=2, batch_first=True), [(2, 12, 32), (2, 25, 32)],
                 attn_mask=("randn", (12, 25))),
        # Scores and gradients that are not finite where a key is hidden: PyTorch 1.13 adds the
        # mask (-inf) to the scores, so a hidden key's +inf or NaN score makes its row NaN, and
        # its gradient is not stopped at the mask (0 * inf is NaN), unlike masked_fill.
        mha_case("hidden_key_inf", "MultiheadAttention(8, 2, batch_first=True), cross-attention with padding, "
                 "key[1, 4, 0] = inf in a padded position: the scores of that hidden key are not finite",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8), (2, 5, 8), (2, 5, 8)],
                 kpm=pad, key_is_value=False, pokes=[("key", (1, 4, 0), float("inf"))]),
        mha_case("hidden_value_gradient_overflow", "MultiheadAttention(8, 2, batch_first=True), cross-attention "
                 "with padding, value[1, 4, 0] = 1e9 in a padded position and grad_output[1, 0, 0] = 1e31: "
                 "dO . v overflows for that hidden key only",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8), (2, 5, 8), (2, 5, 8)],
                 kpm=pad, key_is_value=False, pokes=[("value", (1, 4, 0), 1e9), ("grad_output", (1, 0, 0), 1e31)]),
        mha_case("causal_hidden_key_inf", "MultiheadAttention(8, 2, batch_first=True), query rand(2, 3, 8) against "
                 "key and value rand(2, 5, 8) under the causal [3, 5] attn_mask, key[0, 4, 0] = inf: a key in "
                 "every query's future whose scores are not finite",
                 123, dict(embed_dim=8, num_heads=2, batch_first=True), [(2, 3, 8), (2, 5, 8), (2, 5, 8)],
                 attn_mask=("triu", 3, 5), key_is_value=False, pokes=[("key", (0, 4, 0), float("inf"))]),
        mha_case("float_mask_small", "MultiheadAttention(8, 4, batch_first=True), a float attn_mask [L, S], "
                 "4 x 7 x 2 = 56 multiply-adds per head (PyTorch's naive baddbmm kernel adds the mask first)",
                 7, dict(embed_dim=8, num_heads=4, batch_first=True), [(3, 4, 8), (3, 7, 8)],
                 attn_mask=("randn", (4, 7))),
    ]


def main():
    args = arguments(__doc__, "cross_attention.json", sources=True)
    torch.set_num_threads(1)
    prov = provenance(SCRIPT)
    os.makedirs(args.sources, exist_ok=True)
    seq2seq = {"AttentionOnlySeq2Seq": AttentionOnlySeq2Seq, "copy_batch": copy_batch,
               "cross_attention_weights": cross_attention_weights, "greedy_decode": greedy_decode}
    ns, _ = export_cells(os.path.join(args.sources, "oracle_25_cross_attention.txt"),
                         f"Text export of an oracle run for chapter 25 (cross-attention): PyTorch's own "
                         f"torch.nn.MultiheadAttention, and this project's attention-only encoder-decoder "
                         f"(tools/oracle/reference/seq2seq.py) trained on the Annotated Transformer's copy task, "
                         f"executed by {SCRIPT} with Debian's {prov['debian_package']} (torch {prov['torch_version']}) "
                         f"on the reference BLAS, {prov['date']}: code cells and their printed outputs, in order.",
                         CELLS, {"seq2seq": seq2seq})
    training = []
    for name, python, losses, model in (
            ("copy", "train(reverse=False)", ns["copy_losses"], ns["copy_model"]),
            ("reversal", "train(reverse=True)", ns["reverse_losses"], ns["reverse_model"])):
        training.append({"name": name, "python": python, "loss_bits": [bits(l)[0] for l in losses],
                         "params_after": {n: {"shape": list(p.shape), "bits": bits(p)}
                                          for n, p in model.named_parameters()}})
    doc = {**prov,
           "format": "`cases`: each a call of torch.nn.MultiheadAttention (`python` says which; `module` its "
                     "keyword arguments) drawn after `seed` in the order of mha_case() in the script; tensors as "
                     "{shape, bits: float32 bits as uint32, row-major} or {shape, bool}; `grads` the parameters' .grad "
                     "and `*_grad` the inputs' after (attn_output * grad_output).sum().backward(). `training`: cells "
                     "16-17 of the export, `loss_bits` every step's loss, `params_after` every parameter after the "
                     "last step, in named_parameters() order.",
           "cases": cases(), "training": training}
    write_json(args.out, doc)
    print(f"wrote {args.out} and oracle_25_cross_attention.txt in {args.sources}")


if __name__ == "__main__":
    sys.exit(main())
