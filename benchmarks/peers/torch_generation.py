#!/usr/bin/python3
"""PyTorch's side of the generation benchmark: Raschka's GPT scripts, one case, one thread count,
in this process; prints one JSON line.

    /usr/bin/python3 benchmarks/peers/torch_generation.py --case generate --tokens 200 --threads 1 \
        [--min-time 1.0] [--output ids.bin]
    /usr/bin/python3 benchmarks/peers/torch_generation.py --case decode --context 1023 --threads 1
    /usr/bin/python3 benchmarks/peers/torch_generation.py --case prefill --T 1024 --threads 2

His ch04/03_kv-cache/gpt_with_kv_cache.py (tools/oracle/reference/kv_cache.py, his text) as its
`main` runs it: torch.manual_seed(123), GPTModel(GPT_CONFIG_124M), model.eval(), the prompt
"Hello, I am" = [15496, 11, 314, 716] (tiktoken is not part of Debian), under torch.no_grad():
  generate           generate_text_simple_cached(model, idx, --tokens) (his README's cached run)
  generate_no_cache  his gpt_ch04.py's generate_text_simple (the whole sequence at every step)
  decode             one call model(next, use_cache=True) with every block's cache holding
                     --context tokens, then the caches cut back to them (views, no copy)
  prefill            model(ids) of --T tokens without the cache
Reports new_tokens_per_s for the generate cases. --output writes the warm-up's ids as raw int64
(the driver compares them with the library's). Timing as benchmarks/peers/torch_side.py (one
warm-up call, then calls filling --min-time); run by benchmarks/run/record_generation.py with
glibc's default malloc and with malloc reusing memory; not part of the tests.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_side  # noqa: E402  (timed, blas_info; puts tools/oracle/ on the path)
import torch  # noqa: E402
from reference import kv_cache  # noqa: E402  (his gpt_with_kv_cache.py)

CONFIG = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12,
          "n_layers": 12, "drop_rate": 0.1, "qkv_bias": False}
PROMPT = [15496, 11, 314, 716]


def model():
    torch.manual_seed(123)
    m = kv_cache.GPTModel(CONFIG)
    m.eval()
    return m


def tokens(n):
    return torch.tensor([[PROMPT[i % 4] for i in range(n)]])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", choices=("generate", "generate_no_cache", "decode", "prefill"), required=True)
    p.add_argument("--tokens", type=int, default=200)
    p.add_argument("--context", type=int, default=1023)
    p.add_argument("--T", type=int, default=1024)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--output")
    a = p.parse_args()
    if min(a.tokens, a.context, a.T, a.threads) < 1 or a.min_time <= 0:
        p.error("--tokens, --context, --T and --threads must be >= 1, --min-time > 0")
    torch.set_num_threads(a.threads)
    m = model()
    idx = torch.tensor([PROMPT])
    record = {"side": "pytorch", "case": a.case, "threads": torch.get_num_threads(), "torch": torch.__version__}
    with torch.no_grad():
        if a.case == "generate":
            ids, r = torch_side.timed(lambda: kv_cache.generate_text_simple_cached(m, idx, a.tokens), a.min_time)
            r.update(tokens=a.tokens, new_tokens_per_s=a.tokens / (r["time_ms"] / 1e3))
            if a.output:
                ids[0].numpy().astype("<i8").tofile(a.output)
        elif a.case == "generate_no_cache":
            _, r = torch_side.timed(lambda: kv_cache.generate_text_simple(m, idx, a.tokens, CONFIG["context_length"]),
                                    a.min_time)
            r.update(tokens=a.tokens, new_tokens_per_s=a.tokens / (r["time_ms"] / 1e3))
        elif a.case == "decode":
            m.reset_kv_cache()
            m(tokens(a.context), use_cache=True)
            nxt = torch.tensor([[716]])

            def step():
                out = m(nxt, use_cache=True)
                for blk in m.trf_blocks:  # back to --context tokens (views)
                    blk.att.cache_k = blk.att.cache_k[:, :a.context]
                    blk.att.cache_v = blk.att.cache_v[:, :a.context]
                    blk.att.ptr_current_pos = a.context
                m.current_pos = a.context
                return out

            _, r = torch_side.timed(step, a.min_time)
            r.update(context=a.context)
        else:
            ids = tokens(a.T)
            _, r = torch_side.timed(lambda: m(ids), a.min_time)
            r.update(T=a.T)
    record.update(r)
    record["blas"] = torch_side.blas_info()
    print(json.dumps(record))


if __name__ == "__main__":
    main()
