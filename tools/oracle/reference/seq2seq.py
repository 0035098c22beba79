"""The encoder-decoder of chapter 25, written for this project (no upstream source): the
smallest model in which a decoder attends to an encoder's output. Token and learned position
embeddings, one residual encoder block of self-attention, one decoder block of causal
self-attention then cross-attention to the encoder's output, and an unembedding; every
attention is PyTorch's own `torch.nn.MultiheadAttention` (batch_first); no MLP, no layer norm.
The task is the Annotated Transformer's copy task (Rush et al., "The Annotated Transformer",
harvardnlp, section "A First Example": `data_gen`, start symbol 1) and its reversal.

lib/attn/modules/seq2seq.hpp (`AttentionOnlySeq2Seq`) is its C++ twin, built in the same
order so that a seed gives the same weights."""
import torch


class AttentionOnlySeq2Seq(torch.nn.Module):
    def __init__(self, vocab_size, context_length, emb_dim, num_heads):
        super().__init__()
        self.src_emb = torch.nn.Embedding(vocab_size, emb_dim)
        self.tgt_emb = torch.nn.Embedding(vocab_size, emb_dim)
        self.pos_emb = torch.nn.Embedding(context_length, emb_dim)
        self.encoder = torch.nn.MultiheadAttention(emb_dim, num_heads, batch_first=True)
        self.self_attn = torch.nn.MultiheadAttention(emb_dim, num_heads, batch_first=True)
        self.cross_attn = torch.nn.MultiheadAttention(emb_dim, num_heads, batch_first=True)
        self.out_head = torch.nn.Linear(emb_dim, vocab_size, bias=False)

    def encode(self, src):
        x = self.src_emb(src) + self.pos_emb(torch.arange(src.shape[1]))
        return x + self.encoder(x, x, x, need_weights=False)[0]

    def decode(self, memory, tgt):
        T = tgt.shape[1]
        y = self.tgt_emb(tgt) + self.pos_emb(torch.arange(T))
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        y = y + self.self_attn(y, y, y, attn_mask=causal, need_weights=False)[0]
        y = y + self.cross_attn(y, memory, memory, need_weights=False)[0]
        return self.out_head(y)

    def forward(self, src, tgt):
        return self.decode(self.encode(src), tgt)


def copy_batch(batch_size, vocab_size, length, reverse=False, generator=None):
    """The Annotated Transformer's `data_gen` batch: tokens in [1, vocab_size), the first set to
    the start symbol 1; the target is the source (or the source reversed after its start
    symbol)."""
    src = torch.randint(1, vocab_size, (batch_size, length), generator=generator)
    src[:, 0] = 1
    tgt = src.clone()
    if reverse:
        tgt[:, 1:] = src[:, 1:].flip(1)
    return src, tgt


def greedy_decode(model, src, length):
    """The Annotated Transformer's `greedy_decode`: the encoder once, then one token at a time,
    each the argmax of the last position's logits."""
    memory = model.encode(src)
    ys = torch.ones(src.shape[0], 1, dtype=torch.long)
    for _ in range(length - 1):
        next_token = model.decode(memory, ys)[:, -1].argmax(-1, keepdim=True)
        ys = torch.cat([ys, next_token], dim=1)
    return ys


def cross_attention_weights(model, src, tgt):
    """The decoder's cross-attention weights for `tgt` attending to `src`, averaged over the
    heads: `[B, T_tgt, T_src]` (the decoder's stream rebuilt as `decode` builds it)."""
    memory = model.encode(src)
    T = tgt.shape[1]
    y = model.tgt_emb(tgt) + model.pos_emb(torch.arange(T))
    causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    y = y + model.self_attn(y, y, y, attn_mask=causal, need_weights=False)[0]
    return model.cross_attn(y, memory, memory)[1]
