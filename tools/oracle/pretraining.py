#!/usr/bin/python3
"""Records chapter 26 in PyTorch: Raschka's chapter 5 pretraining (§5.1-5.2), his own cells on Debian's torch.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/pretraining.py

(about 5 hours on one core of a 2-core machine: each of the 90 training steps is a forward and a
backward of the 163-million-parameter model on the reference BLAS). `--epochs N` shortens his run to N
epochs (the export then says so).

His notebook (data/sources/raschka/raschka_ch05.txt, the export of ch05.ipynb at commit b969b3e) printed
its run on his Mac's CPU (torch 2.6). Debian's PyTorch 1.13 draws the same random numbers there (the
portable Bernoulli path), adds in the reference BLAS's order, and steps AdamW as torch 1.13 does. This
script runs his cells In [2]-[27] as his export writes them (tools/oracle/his_code.py takes each by its
line count; nothing is retyped), with his previous_chapters.py (ch05/01_main-chapter-code, the same
commit) as `previous_chapters` and The Verdict (data/text/) in the working folder, so that his In [16]
reads it instead of downloading it. tiktoken is not part of Debian: a stand-in gives the token ids
recorded by the npm port of OpenAI's encoder (data/tokenizer/gpt2_the-verdict.tsv). It writes
- data/sources/oracle/oracle_26_pretraining.txt: the run as a text export (his cells, numbered as his,
  with what they printed), read by tools/extract_book.py;
- data/oracle/pretraining.json: the losses his cells computed as Python floats (In [25]'s, every
  `calc_loss_batch` of his training run, in order, marked training or evaluation), the lists
  `train_model_simple` returns, the SHA-256 of every parameter after the first optimizer step and
  after the last, with provenance.
"""

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, ROOT, code_cells, install_tiktoken, load_module  # noqa: E402
from oracle_common import provenance, write_json  # noqa: E402

SCRIPT = "tools/oracle/pretraining.py"
COMMIT = "b969b3ef7aac466cbbf9f3479c773e07d897c482"
# His code cells In [2]-[27] and their line counts (ch05.ipynb at COMMIT); In [1] prints package
# versions, In [28] plots (the book draws its own figure from the losses).
CELL_LINES = {2: 21, 3: 26, 4: 5, 5: 5, 6: 2, 7: 2, 8: 7, 9: 3, 10: 3, 11: 2, 12: 5, 13: 5, 14: 2, 15: 2,
              16: 38, 17: 2, 18: 2, 19: 5, 20: 32, 21: 11, 22: 7, 23: 11, 24: 24, 25: 28, 26: 57, 27: 22}
EPOCHS_LINE = "num_epochs = 10"


def digests(model):
    """{name: SHA-256 of the parameter's float32 bytes}, in named_parameters() order."""
    return {name: hashlib.sha256(p.detach().contiguous().numpy().tobytes()).hexdigest()
            for name, p in model.named_parameters()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=10, help="his num_epochs (10)")
    ap.add_argument("--smoke", action="store_true",
                    help="a 2-layer, 96-wide model and 1 epoch, to try the script's plumbing in minutes (not an oracle)")
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", "pretraining.json"))
    ap.add_argument("--export", default=os.path.join(ROOT, "data", "sources", "oracle", "oracle_26_pretraining.txt"))
    args = ap.parse_args()
    torch.set_num_threads(1)

    cells = code_cells(os.path.join(RASCHKA, "raschka_ch05.txt"), CELL_LINES)
    if args.epochs != 10:
        assert cells[27].count(EPOCHS_LINE) == 1
        cells[27] = cells[27].replace(EPOCHS_LINE, f"num_epochs = {args.epochs}  # edit: his run has 10")
    if args.smoke:
        for old, new in (('"emb_dim": 768,', '"emb_dim": 96,'), ('"n_layers": 12,', '"n_layers": 2,')):
            assert cells[2].count(old) == 1
            cells[2] = cells[2].replace(old, new)
        cells[27] = cells[27].replace(EPOCHS_LINE, "num_epochs = 1")
    install_tiktoken()
    load_module("previous_chapters", os.path.join(RASCHKA, "raschka_ch05_previous_chapters.py"))

    # What his cells compute but do not print, recorded from outside without changing the arithmetic:
    # every loss calc_loss_batch returns (training when autograd records it), and the parameters'
    # digests after the first and the last optimizer step.
    losses, steps, after_step = [], [0], {}
    his_adamw = torch.optim.AdamW

    class RecordedAdamW(torch.optim.AdamW):
        def step(self, closure=None):
            result = super().step(closure)
            steps[0] += 1
            if steps[0] == 1:
                after_step["first"] = digests(namespace["model"])
            print(f"\rstep {steps[0]} ({time.strftime('%H:%M:%S')})", end="", file=sys.stderr, flush=True)
            return result

    namespace = {}
    parts = []
    work = tempfile.mkdtemp(prefix="oracle26-")
    shutil.copy(os.path.join(ROOT, "data", "text", "the-verdict.txt"), work)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        for n, code in cells.items():
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, f"In [{n}]", "exec"), namespace)
            if n == 24:  # his calc_loss_batch, wrapped to note each loss it returns
                his_calc_loss_batch = namespace["calc_loss_batch"]

                def calc_loss_batch(*a, **k):
                    loss = his_calc_loss_batch(*a, **k)
                    losses.append({"training": loss.requires_grad, "loss": loss.item()})
                    return loss
                namespace["calc_loss_batch"] = calc_loss_batch
            if n == 26:  # In [27] builds its optimizer as torch.optim.AdamW
                torch.optim.AdamW = RecordedAdamW
            printed = out.getvalue().rstrip("\n")
            parts += [f"In [{n}]:", code, ""] + ([printed, ""] if printed else [])
            print(f"In [{n}] done ({time.strftime('%H:%M:%S')})", file=sys.stderr, flush=True)
    finally:
        torch.optim.AdamW = his_adamw
        os.chdir(cwd)
        shutil.rmtree(work)
    model = namespace["model"]
    after_step["last"] = digests(model)

    run = (f"Debian's python3-torch {provenance(SCRIPT)['debian_package'].split()[-1]} (torch {torch.__version__}) "
           f"on the reference BLAS, one thread, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}")
    header = (f"Text export of an oracle run for chapter 26 (pretraining): Raschka's chapter 5 cells In [2]-[27] "
              f"(rasbt/LLMs-from-scratch ch05/01_main-chapter-code/ch05.ipynb, commit {COMMIT}; Apache License 2.0, "
              f"(c) Sebastian Raschka; numbered as his, his previous_chapters.py as `previous_chapters`"
              + (f"; num_epochs {args.epochs} instead of his 10" if args.epochs != 10 else "")
              + f"), executed by {SCRIPT} with {run}: code cells and their printed outputs, in order.")
    os.makedirs(os.path.dirname(args.export), exist_ok=True)
    with open(args.export, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join([header, ""] + parts))

    train_losses, val_losses, tokens_seen = namespace["train_losses"], namespace["val_losses"], namespace["tokens_seen"]
    command = " ".join(["LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3", SCRIPT] + sys.argv[1:])
    write_json(args.out, dict(provenance(SCRIPT, command=command, commit=COMMIT, epochs=1 if args.smoke else args.epochs,
                                         smoke=args.smoke), **{
        "format": "Python floats as Python prints them (repr: the shortest decimal that reads back as the same double); "
                  "SHA-256 of each parameter's float32 bytes (little-endian, row-major), in named_parameters() order.",
        "initial_losses": {"python": "his In [25]: torch.manual_seed(123); calc_loss_loader over both loaders",
                           "train_loss": repr(namespace["train_loss"]), "val_loss": repr(namespace["val_loss"])},
        "calc_loss_batch": [{"training": e["training"], "loss": repr(e["loss"])} for e in losses],
        "train_losses": [repr(v) for v in train_losses],
        "val_losses": [repr(v) for v in val_losses],
        "tokens_seen": list(tokens_seen),
        "parameters_after_first_step": after_step.get("first", {}),
        "parameters_after_last_step": after_step["last"],
    }))
    print(f"\nwrote {args.export} and {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
