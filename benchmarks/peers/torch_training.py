#!/usr/bin/python3
"""PyTorch's side of the training benchmark: one case, one thread count, in this process;
prints one JSON line.

    /usr/bin/python3 benchmarks/peers/torch_training.py --case mha_train --T 1024 --threads 1 \
        [--min-time 1.0] [--output dx.bin]
    /usr/bin/python3 benchmarks/peers/torch_training.py --case induction_train --steps 300 --threads 1

mha_train: Raschka's MultiHeadAttention (tools/oracle/multihead.py) at GPT-2 sizes after
torch.manual_seed(0), x = torch.rand(1, T, 768) requiring grad; one call is
`zero_grad(set_to_none=True)` (PyTorch's cheaper way), `loss = mha(x).pow(2).mean()`,
`loss.backward()` (every parameter's .grad and x.grad). --output writes the warm-up's x.grad
as raw float32 (the driver compares it with the library's dL/dx).

induction_train: chapter 21's loop as tools/oracle/attention_learns.py records it (its cell
defining AttentionOnlyTransformer and repeated_tokens, run here): torch.manual_seed(123), the
model (vocab 32, context 23, width 32, 2 heads), AdamW(lr=0.01), then `--steps` steps of B = 32
sequences; one call is the whole run from the seed, so every call does the same work as the
library's. Reports steps_per_s and the last step's loss.

Timing as benchmarks/peers/torch_side.py (one warm-up call, then calls filling --min-time;
wall and CPU time per call, peak RSS, page faults per call). Run by
benchmarks/run/record_training.py with glibc's default malloc and with malloc reusing memory;
not part of the tests.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_side  # noqa: E402  (timed, blas_info; puts tools/oracle/ on the path)
import torch  # noqa: E402
from multihead import MultiHeadAttention  # noqa: E402

D, H = 768, 12


def mha_train(T, output, min_time):
    torch.manual_seed(0)
    mha = MultiHeadAttention(d_in=D, d_out=D, context_length=T, dropout=0.0, num_heads=H)
    x = torch.rand(1, T, D).requires_grad_(True)

    def step():
        mha.zero_grad(set_to_none=True)
        x.grad = None
        loss = mha(x).pow(2).mean()
        loss.backward()
        return x.grad

    grad_x, record = torch_side.timed(step, min_time)
    if output:
        grad_x.contiguous().numpy().astype("float32").tofile(output)
    return record


def induction_train(steps, min_time):
    import attention_learns  # the oracle's cells: the model and the data, as recorded
    cell = next(c for c in attention_learns.CELLS if "class AttentionOnlyTransformer" in c)
    ns = {"torch": torch, "MultiHeadAttention": MultiHeadAttention}
    exec(cell, ns)  # defines AttentionOnlyTransformer and repeated_tokens
    V, B = 32, 32

    def run():
        torch.manual_seed(123)
        model = ns["AttentionOnlyTransformer"](vocab_size=V, context_length=23, emb_dim=32, num_heads=2)
        optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
        for _ in range(steps):
            half = torch.randint(6, 13, (1,)).item()
            seq = ns["repeated_tokens"](B, half, V)
            logits = model(seq[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss.item()

    last, record = torch_side.timed(run, min_time)
    record.update(steps=steps, steps_per_s=steps / (record["time_ms"] / 1e3), last_loss=last)
    return record


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--case", choices=("mha_train", "induction_train"), required=True)
    p.add_argument("--T", type=int, default=1024)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--output")
    a = p.parse_args()
    if a.T < 1 or a.steps < 1 or a.threads < 1 or a.min_time <= 0:
        p.error("--T, --steps and --threads must be >= 1, --min-time > 0")
    torch.set_num_threads(a.threads)
    record = {"side": "pytorch", "case": a.case, "threads": torch.get_num_threads(),
              "torch": torch.__version__}
    if a.case == "mha_train":
        record.update(mha_train(a.T, a.output, a.min_time), T=a.T)
    else:
        record.update(induction_train(a.steps, a.min_time))
    record["blas"] = torch_side.blas_info()
    print(json.dumps(record))


if __name__ == "__main__":
    main()
