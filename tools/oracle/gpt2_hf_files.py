#!/usr/bin/python3
"""Writes a small GPT-2 in Hugging Face's safetensors layout, loads it with Raschka's loader, records the logits.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/gpt2_hf_files.py

What Hugging Face's `openai-community/gpt2` model.safetensors holds (GPT2Model's state dict, as
converted from its pytorch_model.bin): keys without a prefix, `wte.weight [V, E]`, `wpe.weight [C, E]`,
per block `h.N.ln_1.{weight,bias}`, `h.N.attn.bias [1, 1, C, C]` (the causal mask buffer, float32
lower-triangular ones), `h.N.attn.c_attn.{weight [E, 3E], bias [3E]}`, `h.N.attn.c_proj`,
`h.N.ln_2`, `h.N.mlp.c_fc.{weight [E, 4E], bias}`, `h.N.mlp.c_proj.{weight [4E, E], bias}`, then
`ln_f.{weight,bias}`; float32; metadata {"format": "pt"} (transformers' GPT2Model.from_pretrained("gpt2")
warns that the h.N.attn.bias entries are unused: the file holds them, and no h.N.attn.masked_bias).

This script draws such tensors for a small config after torch.manual_seed(123) (Conv1D weights in
their [in, out] layout), writes them with safetensors_files.py's writer (the `safetensors` package
is not part of Debian) as F32, F16 and BF16 files, and a config.json as transformers'
GPT2Config.to_json_string writes one (sorted keys, indent 2; transformers is not part of Debian
either, so its fields are written here, as openai-community/gpt2's config.json holds them, with
the small sizes). Then for each file: his GPTModel (his chapter 5 previous_chapters.py,
data/sources/raschka/) built with the small config, his In [6] `assign` and In [7]
`load_weights_into_gpt` (run from data/sources/raschka/raschka_ch05_hf_safetensors.txt, never
retyped) given the file's tensors as float32 (`.float()`, what load_file then `param.copy_` gives
for F16/BF16), eval mode, logits for a fixed batch of ids: of his model as his loader leaves it
(transposed views: see main) and of the same weights in a model loaded with load_state_dict
(contiguous parameters). Also config_gpt2_124M.json, the config
of openai-community/gpt2 itself. For the 124M configuration no file is kept (500 MB): the
SHA-256 of the file the same draws give at that size, and a few of his model's logits
(GPT2_124M_OUT=path writes the file). On the F32 file, his `generate` (ch05 In [40], from the
export) after torch.manual_seed(123) with GENERATE_ARGS, on both models. Into data/oracle/gpt2_hf/: the files and gpt2_hf.json (provenance,
the config, ids, each file's SHA-256, tensors' keys and the logits' float32 bits).
"""

import hashlib
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, code_cells, install_tiktoken, load_module  # noqa: E402
from oracle_common import arguments, provenance, write_json  # noqa: E402
from safetensors_files import ALIGNMENT, DTYPE, raw_bytes, serialize  # noqa: E402

SCRIPT = "tools/oracle/gpt2_hf_files.py"
# His In [4]'s BASE_CONFIG (vocab, context, no dropout, qkv_bias) with small sizes.
SMALL_CONFIG = {"vocab_size": 50, "context_length": 8, "emb_dim": 16, "n_heads": 4, "n_layers": 2,
                "drop_rate": 0.0, "qkv_bias": True}


def hf_config(vocab, ctx, emb, heads, layers):
    """config.json as transformers writes GPT-2's (openai-community/gpt2's fields, these sizes)."""
    return {
        "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
        "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
        "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": ctx, "n_embd": emb, "n_head": heads,
        "n_layer": layers, "n_positions": ctx, "resid_pdrop": 0.1, "summary_activation": None,
        "summary_first_dropout": 0.1, "summary_proj_to_labels": True, "summary_type": "cls_index",
        "summary_use_proj": True,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
        "vocab_size": vocab}


def hf_tensors(cfg):
    """GPT2Model's state dict in its order, random after the caller's seed (the masks are ones)."""
    V, C, E, L = cfg["vocab_size"], cfg["context_length"], cfg["emb_dim"], cfg["n_layers"]

    def w(*shape, scale=0.2):
        return torch.randn(*shape) * scale

    sd = {"wte.weight": w(V, E, scale=0.5), "wpe.weight": w(C, E, scale=0.1)}
    for b in range(L):
        h = f"h.{b}."
        sd[h + "ln_1.weight"] = 1 + w(E, scale=0.1)
        sd[h + "ln_1.bias"] = w(E, scale=0.1)
        sd[h + "attn.bias"] = torch.tril(torch.ones(C, C)).view(1, 1, C, C)
        sd[h + "attn.c_attn.weight"] = w(E, 3 * E)
        sd[h + "attn.c_attn.bias"] = w(3 * E, scale=0.1)
        sd[h + "attn.c_proj.weight"] = w(E, E)
        sd[h + "attn.c_proj.bias"] = w(E, scale=0.1)
        sd[h + "ln_2.weight"] = 1 + w(E, scale=0.1)
        sd[h + "ln_2.bias"] = w(E, scale=0.1)
        sd[h + "mlp.c_fc.weight"] = w(E, 4 * E)
        sd[h + "mlp.c_fc.bias"] = w(4 * E, scale=0.1)
        sd[h + "mlp.c_proj.weight"] = w(4 * E, E, scale=0.1)
        sd[h + "mlp.c_proj.bias"] = w(E, scale=0.1)
    sd["ln_f.weight"] = 1 + w(E, scale=0.1)
    sd["ln_f.bias"] = w(E, scale=0.1)
    return sd


GPT2_124M = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12, "n_layers": 12,
             "drop_rate": 0.0, "qkv_bias": True}  # his In [4], "gpt2-small (124M)"
IDS_124M = [[6109, 3626, 6100, 345]]  # "Every effort moves you" (his chapter 4)


def serialized_sha256(tensors, metadata, out=None):
    """SHA-256 of serialize(tensors, metadata) without holding the file's bytes (and the file
    written to `out` when given): the same header, then each tensor's bytes in its order."""
    order = sorted(tensors, key=lambda name: (-ALIGNMENT.index(DTYPE[tensors[name].dtype]), name.encode()))
    header, offset = {"__metadata__": metadata}, 0
    for name in order:
        n = tensors[name].numel() * tensors[name].element_size()
        header[name] = {"dtype": DTYPE[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    h = hashlib.sha256()
    f = open(out, "wb") if out else None
    for part in [struct.pack("<Q", len(text)) + text] + [raw_bytes(tensors[name]) for name in order]:
        h.update(part)
        if f:
            f.write(part)
    if f:
        f.close()
    return h.hexdigest()


def record_124m(pc, load_weights_into_gpt):
    """The 124M configuration without its 500 MB file: the SHA-256 of the file hf_tensors writes
    after torch.manual_seed(123), and a few of his model's logits after his loader (written to
    $GPT2_124M_OUT too when set)."""
    cfg = GPT2_124M
    torch.manual_seed(123)
    tensors = hf_tensors(cfg)
    sha = serialized_sha256(tensors, {"format": "pt"}, os.environ.get("GPT2_124M_OUT"))
    gpt = pc.GPTModel(cfg)
    load_weights_into_gpt(gpt, tensors)
    gpt.eval()
    ids = torch.tensor(IDS_124M)
    with torch.no_grad():
        views = gpt(ids)
        for p in gpt.parameters():  # the same values, contiguous (as load_state_dict gives them)
            p.data = p.data.contiguous()
        logits = gpt(ids)

    def summary(t):
        return {"sha256": hashlib.sha256(t.numpy().astype("<f4").tobytes()).hexdigest(),
                "first8_bits": t[0, :, :8].numpy().view(np.uint32).tolist(),
                "argmax": t[0].argmax(dim=-1).tolist()}
    return {"python": "torch.manual_seed(123); tensors = hf_tensors(config); sha256 = SHA-256 of "
                      "serialize(tensors, {'format': 'pt'}) (F32); gpt = GPTModel(config); "
                      "load_weights_into_gpt(gpt, tensors); gpt.eval(); logits of ids, as his loader leaves "
                      "the parameters (his_views) and with each made contiguous (contiguous)",
            "config": cfg, "sha256": sha, "ids": IDS_124M, "logits_shape": list(logits.shape),
            "contiguous": summary(logits), "his_views": summary(views)}


def his_loader():
    """His In [6] `assign` and In [7] `load_weights_into_gpt`, from the notebook's text export."""
    cells = code_cells(os.path.join(RASCHKA, "raschka_ch05_hf_safetensors.txt"), {6: 4, 7: 59})
    namespace = {"torch": torch}
    exec(compile(cells[6] + "\n\n" + cells[7], "hf_safetensors In [6], In [7]", "exec"), namespace)
    return namespace["load_weights_into_gpt"]


GENERATE_PROMPT = [1, 5, 49]
GENERATE_ARGS = {"max_new_tokens": 5, "top_k": 5, "temperature": 1.5}


def his_generate():
    """His `generate` (ch05 In [40]), from the chapter's text export."""
    cells = code_cells(os.path.join(RASCHKA, "raschka_ch05.txt"), {40: 41})
    namespace = {"torch": torch}
    exec(compile(cells[40], "ch05 In [40]", "exec"), namespace)
    return namespace["generate"]


def main():
    args = arguments(__doc__, "gpt2_hf")
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    install_tiktoken()  # previous_chapters.py imports tiktoken (not used here)
    pc = load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))
    load_weights_into_gpt = his_loader()

    cfg = SMALL_CONFIG
    torch.manual_seed(123)
    tensors = hf_tensors(cfg)
    ids = torch.tensor([[1, 5, 49, 0, 7, 3, 22, 40], [9, 9, 2, 14, 21, 6, 33, 48]])
    doc = {**provenance(SCRIPT, commit="28c65cdfbc3338e2e040016eea4b7fdf556e4d57"),
           "python": "torch.manual_seed(123); tensors = hf_tensors(config) (this script: GPT2Model's keys and "
                     "shapes, Conv1D weights [in, out]); for each file: gpt = GPTModel(config); "
                     "load_weights_into_gpt(gpt, {k: t.float() for k, t in file's tensors}) (his In [6], In [7]); "
                     "gpt.eval(); logits_bits_his_views = gpt(ids); fresh = GPTModel(config); "
                     "fresh.load_state_dict(gpt.state_dict()); fresh.eval(); logits_bits = fresh(ids)",
           "config": cfg, "config_json": "config.json", "metadata": {"format": "pt"},
           "keys": list(tensors.keys()), "ids": ids.tolist(), "files": {}}
    config_text = json.dumps(hf_config(cfg["vocab_size"], cfg["context_length"], cfg["emb_dim"], cfg["n_heads"],
                                       cfg["n_layers"]), indent=2, sort_keys=True) + "\n"
    with open(os.path.join(args.out, "config.json"), "w", encoding="utf-8") as f:
        f.write(config_text)
    with open(os.path.join(args.out, "config_gpt2_124M.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(hf_config(50257, 1024, 768, 12, 12), indent=2, sort_keys=True) + "\n")

    for name, dtype in [("model.safetensors", torch.float32), ("model_f16.safetensors", torch.float16),
                        ("model_bf16.safetensors", torch.bfloat16)]:
        file_tensors = {k: t.to(dtype) for k, t in tensors.items()}
        data = serialize(file_tensors, {"format": "pt"})
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
        gpt = pc.GPTModel(cfg)
        load_weights_into_gpt(gpt, {k: t.float() for k, t in file_tensors.items()})
        gpt.eval()
        # His assign keeps q_w.T etc. as transposed views (strides (1, 3E), (1, E)), so F.linear's
        # addmm(bias, x, W.t()) gets a contiguous W.t() and the reference BLAS's 'N' loop, which adds
        # the products into C = bias one by one (the bias first); contiguous weights take the 'T'
        # loop, which sums the products, then adds the bias. The same values in a model built and
        # loaded with load_state_dict (contiguous parameters, as any model read from its own file)
        # compute `logits_bits`; his model as his loader leaves it `logits_bits_his_views`.
        fresh = pc.GPTModel(cfg)
        fresh.load_state_dict(gpt.state_dict())
        fresh.eval()
        assert all(p.is_contiguous() for p in fresh.parameters())
        with torch.no_grad():
            views = gpt(ids)
            logits = fresh(ids)
        doc["files"][name] = {"dtype": str(dtype), "sha256": hashlib.sha256(data).hexdigest(),
                              "logits_shape": list(logits.shape),
                              "logits_bits": logits.reshape(-1).numpy().view(np.uint32).tolist(),
                              "logits_bits_his_views": views.reshape(-1).numpy().view(np.uint32).tolist()}
        assert serialized_sha256(file_tensors, {"format": "pt"}) == doc["files"][name]["sha256"]
        if name == "model.safetensors":  # his generate (ch05 In [40]) on this file, after manual_seed(123)
            generate = his_generate()
            prompt = torch.tensor([GENERATE_PROMPT])
            doc["generate"] = {"prompt": GENERATE_PROMPT, **GENERATE_ARGS}
            for key, model in [("ids", fresh), ("ids_his_views", gpt)]:
                torch.manual_seed(123)
                doc["generate"][key] = generate(model, prompt, context_size=cfg["context_length"],
                                                **GENERATE_ARGS)[0].tolist()
    doc["gpt2_124M"] = record_124m(pc, load_weights_into_gpt)
    write_json(os.path.join(args.out, "gpt2_hf.json"), doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
