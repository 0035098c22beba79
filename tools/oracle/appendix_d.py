#!/usr/bin/python3
"""Records what the appendix D tests compare with: his learning-rate schedules, clip_grad_norm_, find_highest_gradient, train_model.

Run with Debian's interpreter (python3-torch) on Debian's reference BLAS, one thread:

    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 tools/oracle/appendix_d.py

(a few minutes.) Raschka's appendix D ("Adding bells and whistles to the training loop",
data/sources/raschka/raschka_appendix_d.txt, the export of appendix-D.ipynb at commit 9ce0be3) runs
here cell by cell as his export writes it (tools/oracle/his_code.py takes each cell by its line count;
nothing is retyped), with his appendix-D previous_chapters.py (the same commit) as `previous_chapters`,
The Verdict (data/text/) in the working folder (his In [2] reads it instead of downloading it), a
stand-in for tiktoken (his_code.install_tiktoken) and one for matplotlib, which is not part of Debian's
python3-torch (every call does nothing: his plots). Declared edits (EDITS) make it small enough for minutes:
- In [1]: his GPT_CONFIG_124M becomes a small GPT (emb_dim 16, n_heads 4, n_layers 2; vocabulary 50257,
  context 256, dropout 0.1 and no qkv bias as his), so every later cell builds that model;
- In [12] and In [13]: his `max_norm=1.0` becomes 0.1, as small as the small model's gradients (their total
  norm is about 0.27 where his 124M model's is above 2), so that clipping changes them;
- In [14]: `n_epochs = 15` becomes 2 epochs with `warmup_steps` from his In [5] formula for them (3).
It writes data/oracle/appendix_d.json:
- `printed`: what his cells printed (In [5]'s warmup steps, In [11] and In [12]'s find_highest_gradient,
  the loss lines and samples of In [14]);
- `schedules`: his In [6] (warmup, then peak_lr) and In [8] (warmup and cosine decay) `track_lrs`, for
  his In [4] values and, run again with other values of In [4]'s variables, for five other settings;
- `find_highest_gradient`: his In [10]-[12] (the last batch of his In [8] loop, a new model, one
  backward): the result before and after clip_grad_norm_, its total norm, every `.grad`'s SHA-256
  before and after;
- `train_model`: his In [14] run (the book's clipping, `global_step > warmup_steps`) and again with his
  repository's later `>=` (BOOK_VERSION = False): per step its learning rate, training loss, the total
  norm clip_grad_norm_ returned (null: no clipping) and the SHA-256 of all parameters after
  optimizer.step(); what it printed and returned; every parameter's SHA-256 at the end;
- `clip_grad_norm`: torch.nn.utils.clip_grad_norm_ on gradient sets drawn with torch.randn (sizes for
  the norm's vector and tail paths, many parameters, parameters without a gradient, empty gradients,
  zero, infinite and NaN norms, norm_type inf, error_if_nonfinite): the total norm's bits or the
  error, every gradient after (bits, or SHA-256 for large ones), and his find_highest_gradient of the
  set before and after (its bits, None, or the error).
"""

import contextlib
import hashlib
import io
import os
import shutil
import sys
import tempfile
import types

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from his_code import RASCHKA, ROOT, code_cells, install_tiktoken, load_module  # noqa: E402
from oracle_common import arguments, provenance, write_json  # noqa: E402

SCRIPT = "tools/oracle/appendix_d.py"
COMMIT = "9ce0be333b562590ed7185304e36a6c52fd49ffc"
EXPORT = os.path.join(RASCHKA, "raschka_appendix_d.txt")
# His code cells and their line counts (appendix-D.ipynb at COMMIT).
CELL_LINES = {1: 37, 2: 14, 3: 28, 4: 3, 5: 3, 6: 24, 7: 9, 8: 30, 9: 6, 10: 8, 11: 11, 12: 2, 13: 79,
              14: 28}  # In [15] and [16] plot what In [14] returned
# The declared edits: (old, new, how many times old occurs in his cell).
MAX_NORM = "max_norm=0.1)  # edit: his max_norm=1.0, for the small model's gradients"
EDITS = {1: [('"emb_dim": 768,', '"emb_dim": 16,', 1), ('"n_heads": 12,', '"n_heads": 4,', 1),
             ('"n_layers": 12,', '"n_layers": 2,', 1)],
         12: [("max_norm=1.0)", MAX_NORM, 1)],
         13: [("max_norm=1.0)  ", MAX_NORM, 1), ("max_norm=1.0)", MAX_NORM, 1)],
         14: [("n_epochs = 15", "n_epochs = 2; warmup_steps = int(0.2 * len(train_loader) * n_epochs)  "
                                "# edit: his run has 15 epochs and In [5]'s warmup_steps (27)", 1)]}
# Other values of his In [4] variables (n_epochs, initial_lr, peak_lr) for In [5]-[8] run again.
OTHER_SCHEDULES = [(10, 3e-05, 0.0004), (1, 1e-05, 0.001), (3, 0.0, 0.001), (2, 0.02, 0.01), (50, 6e-4, 6e-4)]
LARGE = 4096  # gradients with more elements are recorded by SHA-256


def bits(t):
    """float32 bits, row-major, as uint32."""
    return t.detach().contiguous().numpy().view(np.uint32).ravel().tolist()


def digest(tensors):
    """SHA-256 of float32 tensors' bytes, one after the other (little-endian, row-major)."""
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().astype("<f4").tobytes())
    return h.hexdigest()


def install_matplotlib():
    """A stand-in for matplotlib (and matplotlib.pyplot): every attribute and call does nothing."""
    class Nothing(types.ModuleType):
        def __getattr__(self, name):
            return self

        def __call__(self, *args, **kwargs):
            return self
    pyplot = Nothing("matplotlib.pyplot")
    matplotlib = types.ModuleType("matplotlib")
    matplotlib.pyplot = pyplot
    sys.modules["matplotlib"] = matplotlib
    sys.modules["matplotlib.pyplot"] = pyplot


def his_cells():
    cells = code_cells(EXPORT, CELL_LINES)
    for n, edits in EDITS.items():
        for old, new, count in edits:
            assert cells[n].count(old) == count, (n, old)
            cells[n] = cells[n].replace(old, new)
    return cells


class Run:
    """His cells in one namespace, as Jupyter runs them, with what each printed."""

    def __init__(self, cells):
        self.cells, self.ns, self.printed = cells, {}, {}

    def run(self, n):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(self.cells[n], f"In [{n}]", "exec"), self.ns)
        self.printed[n] = out.getvalue()
        return self.printed[n]


def train_model_case(run, book_version, clip_calls):
    """His In [14] (edited: 2 epochs) with BOOK_VERSION as given, recorded step by step."""
    ns = run.ns
    steps = []
    his_adamw, his_calc_loss_batch = torch.optim.AdamW, ns["calc_loss_batch"]

    class RecordedAdamW(torch.optim.AdamW):
        def step(self, closure=None):
            result = super().step(closure)
            steps[-1]["lr"] = self.param_groups[0]["lr"]
            steps[-1]["parameters_sha256"] = digest(ns["model"].parameters())
            return result

    def calc_loss_batch(*args, **kwargs):
        loss = his_calc_loss_batch(*args, **kwargs)
        if loss.requires_grad:  # the training step's (evaluate_model calls previous_chapters' own)
            steps.append({"loss_bits": bits(loss.reshape(1))[0], "clip_total_norm_bits": None})
        return loss

    def record_clip(total):
        steps[-1]["clip_total_norm_bits"] = bits(total.reshape(1))[0]
    ns["BOOK_VERSION"] = book_version
    ns["calc_loss_batch"] = calc_loss_batch
    clip_calls.append(record_clip)
    torch.optim.AdamW = RecordedAdamW
    try:
        printed = run.run(14)
    finally:
        torch.optim.AdamW = his_adamw
        ns["calc_loss_batch"] = his_calc_loss_batch
        clip_calls.clear()
    model = ns["model"]
    return {"python": f"his In [14] (edited: n_epochs = 2, warmup_steps = {ns['warmup_steps']}) with BOOK_VERSION = "
                      f"{book_version} (clipping when global_step {'>' if book_version else '>='} warmup_steps)",
            "book_version": book_version, "n_epochs": ns["n_epochs"], "warmup_steps": ns["warmup_steps"],
            "peak_lr": ns["peak_lr"], "initial_lr": 1e-5, "min_lr": 1e-5, "eval_freq": 5, "eval_iter": 1, "max_norm": 0.1,
            "steps": steps, "printed": printed, "train_losses": ns["train_losses"], "val_losses": ns["val_losses"],
            "tokens_seen": ns["tokens_seen"], "track_lrs": ns["lrs"],
            "parameters_sha256": {name: digest([p]) for name, p in model.named_parameters()}}


def schedules(run):
    """His In [6] and In [8] track_lrs for In [4]'s values, then In [4]-[8] again with others."""
    ns = run.ns
    out = []

    def record(n_epochs, initial_lr, peak_lr):
        ns.update(n_epochs=n_epochs, initial_lr=initial_lr, peak_lr=peak_lr)
        warmup_printed = run.run(5)
        run.run(6)
        warmup_only = list(ns["track_lrs"])
        run.run(7)
        run.run(8)
        out.append({"n_epochs": n_epochs, "initial_lr": initial_lr, "peak_lr": peak_lr,
                    "warmup_steps": ns["warmup_steps"], "printed_warmup_steps": warmup_printed,
                    "total_training_steps": ns["total_training_steps"], "min_lr": ns["min_lr"],
                    "in6_track_lrs": warmup_only, "in8_track_lrs": list(ns["track_lrs"])})
    for setting in [(15, 0.0001, 0.01)] + OTHER_SCHEDULES:
        record(*setting)
    return out


class Parameters:
    """What his find_highest_gradient asks of a model: parameters()."""

    def __init__(self, params):
        self.params = params

    def parameters(self):
        return iter(self.params)


def highest(find_highest_gradient, params):
    """His find_highest_gradient of the parameters: {"bits"}, {"none"} or {"error"}."""
    try:
        result = find_highest_gradient(Parameters(params))
    except RuntimeError as e:
        return {"error": str(e)}
    return {"none": True} if result is None else {"bits": bits(result.reshape(1))[0]}


def clip_cases(find_highest_gradient):
    """clip_grad_norm_ on gradient sets: (seed, shapes (None: no .grad), scale, specials, max_norm,
    norm_type, error_if_nonfinite); specials are (gradient, flat index, value) set after the draws.
    His find_highest_gradient of each set before and after."""
    inf, nan = float("inf"), float("nan")
    small = [(n,) for n in range(0, 21)]
    specs = [
        ("sizes 0-20, one vector each", 1, small, 1.0, [], 1.0, 2.0, False),
        ("sizes 0-20 scaled down: no clipping", 2, small, 0.01, [], 1.0, 2.0, False),
        ("sizes for the 8-lane and tail paths", 3, [(7,), (8,), (9,), (12,), (13,), (15,), (16,), (100,), (1027,),
                                                   (4099,), (65541,)], 1.0, [], 1.0, 2.0, False),
        ("matrices and a 3-d gradient", 4, [(16, 24), (24,), (3, 5, 7), (50, 33)], 2.0, [], 0.5, 2.0, False),
        ("37 parameters (the norms' vector: 4 vectors and a tail of 5)", 5,
         [(3 + (i * 7) % 29,) for i in range(37)], 1.0, [], 1.0, 2.0, False),
        ("13 parameters, some without a gradient", 6,
         [None if i % 4 == 1 else (5 + i,) for i in range(13)], 1.0, [], 0.25, 2.0, False),
        ("one parameter", 7, [(10,)], 3.0, [], 1.0, 2.0, False),
        ("one element", 8, [(1,)], 1.0, [], 1e-3, 2.0, False),
        ("max_norm 100: coefficient clamped to 1", 9, [(40,), (9,)], 1.0, [], 100.0, 2.0, False),
        ("max_norm 1e-3", 10, [(40,), (9,)], 1.0, [], 1e-3, 2.0, False),
        ("max_norm 7 (an integer in Python)", 11, [(40,), (9,)], 1.0, [], 7, 2.0, False),
        ("all zero: total norm 0", 12, [(5,), (9,)], 0.0, [], 1.0, 2.0, False),
        ("an empty gradient among others", 13, [(0,), (6,), (0, 4)], 1.0, [], 0.5, 2.0, False),
        ("no parameter", 14, [], 1.0, [], 1.0, 2.0, False),
        ("no gradient", 15, [None, None], 1.0, [], 1.0, 2.0, False),
        ("squares overflow: total norm inf", 16, [(5,), (9,)], 1.0, [(1, 3, 1e20)], 1.0, 2.0, False),
        ("an inf element", 17, [(5,), (9,)], 1.0, [(0, 2, inf)], 1.0, 2.0, False),
        ("a -inf element", 18, [(12,)], 1.0, [(0, 11, -inf)], 1.0, 2.0, False),
        ("a NaN element", 19, [(5,), (9,)], 1.0, [(1, 0, nan)], 1.0, 2.0, False),
        ("inf, error_if_nonfinite", 20, [(5,), (9,)], 1.0, [(0, 2, inf)], 1.0, 2.0, True),
        ("NaN, error_if_nonfinite", 21, [(5,), (9,)], 1.0, [(1, 4, nan)], 1.0, 2.0, True),
        ("finite, error_if_nonfinite", 22, [(5,), (9,)], 1.0, [], 1.0, 2.0, True),
        ("norm_type inf", 23, [(5,), (9,), (17,)], 1.0, [], 0.5, inf, False),
        ("norm_type inf, one parameter", 24, [(33,)], 1.0, [], 0.5, inf, False),
        ("norm_type inf, a NaN element", 25, [(5,), (9,)], 1.0, [(0, 1, nan)], 0.5, inf, False),
        ("norm_type inf, inf, error_if_nonfinite", 26, [(5,), (9,)], 1.0, [(1, 1, -inf)], 0.5, inf, True),
        ("large gradients (GPT-sized rows)", 27, [(50257, 3), (768,), (3, 1000)], 0.05, [], 1.0, 2.0, False),
        ("a NaN in a later gradient, a negative NaN in one element", 28, [(1,), (6,), (4,)], 1.0,
         [(0, 0, -nan), (2, 3, nan)], 1.0, 2.0, False),
        ("norm_type inf, a NaN alone", 29, [(1,), (3,)], 1.0, [(0, 0, nan)], 0.5, inf, False),
        ("norm_type inf, a NaN in the only parameter", 30, [(4,)], 1.0, [(0, 2, nan)], 0.5, inf, False),
        ("the largest gradient negative: find_highest_gradient's max is below 0", 31, [(3,), (2,)], 1.0,
         [(0, 0, -1.0), (0, 1, -2.0), (0, 2, -3.0), (1, 0, -0.5), (1, 1, -4.0)], 1.0, 2.0, False),
    ]
    out = []
    for name, seed, shapes, scale, specials, max_norm, norm_type, error in specs:
        torch.manual_seed(seed)
        params = []
        for shape in shapes:
            p = torch.nn.Parameter(torch.zeros(shape if shape is not None else (1,)))
            if shape is not None:
                p.grad = torch.randn(shape) * scale
            params.append(p)
        for k, index, value in specials:
            params[k].grad.view(-1)[index] = value
        before = [None if p.grad is None else p.grad.clone() for p in params]
        highest_before = highest(find_highest_gradient, params)
        case = {"name": name, "seed": seed, "shapes": shapes, "scale": scale,
                "specials": [[k, i, repr(v), int(np.float32(v).view(np.uint32))] for k, i, v in specials], "max_norm": max_norm,
                "norm_type": repr(norm_type), "error_if_nonfinite": error,
                "python": "manual_seed(seed); for each shape: p.grad = torch.randn(shape) * scale (None: no grad); "
                          "specials: p.grad.view(-1)[index] = value; torch.nn.utils.clip_grad_norm_(params, max_norm, "
                          "norm_type, error_if_nonfinite)"}
        try:
            total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite=error)
            case["total_norm_bits"] = bits(total.reshape(1))[0]
        except RuntimeError as e:
            case["error"] = str(e)
            assert all(b is None or torch.equal(b.view(-1).view(torch.int32), p.grad.view(-1).view(torch.int32))
                       for b, p in zip(before, params))
        case["highest_before"] = highest_before
        case["highest_after"] = highest(find_highest_gradient, params)
        case["grads_after"] = [None if p.grad is None else
                               ({"sha256": digest([p.grad])} if p.grad.numel() > LARGE else {"bits": bits(p.grad)})
                               for p in params]
        out.append(case)
    return out


def main():
    args = arguments(__doc__, "appendix_d.json")
    torch.set_num_threads(1)
    install_tiktoken()
    install_matplotlib()
    load_module("previous_chapters", os.path.join(RASCHKA, "raschka_appendix_d_previous_chapters.py"))

    # Every call of clip_grad_norm_ his cells make, its total norm passed to the current recorder.
    clip_calls = []
    his_clip = torch.nn.utils.clip_grad_norm_

    def clip_grad_norm_(*args, **kwargs):
        total = his_clip(*args, **kwargs)
        for record in clip_calls:
            record(total)
        return total

    run = Run(his_cells())
    work = tempfile.mkdtemp(prefix="oracle-appendix-d-")
    shutil.copy(os.path.join(ROOT, "data", "text", "the-verdict.txt"), work)
    cwd = os.getcwd()
    os.chdir(work)
    torch.nn.utils.clip_grad_norm_ = clip_grad_norm_
    try:
        for n in range(1, 10):
            run.run(n)
        ns = run.ns
        run.run(10)
        model = ns["model"]
        highest = {"python": "his In [10]-[12]: the last batch of his In [8] loop; torch.manual_seed(123); model = "
                             "GPTModel(GPT_CONFIG_124M) (training mode); calc_loss_batch; loss.backward(); "
                             "find_highest_gradient(model); clip_grad_norm_(model.parameters(), max_norm=0.1); "
                             "find_highest_gradient(model)",
                   "input_batch": ns["input_batch"].tolist(), "loss_bits": bits(ns["loss"].reshape(1))[0],
                   "grads_sha256": {name: digest([p.grad]) for name, p in model.named_parameters()}}
        run.run(11)
        highest["before_bits"] = bits(ns["find_highest_gradient"](model).reshape(1))[0]
        totals = []
        clip_calls.append(totals.append)
        run.run(12)
        clip_calls.clear()
        highest["total_norm_bits"] = bits(totals[0].reshape(1))[0]
        highest["after_bits"] = bits(ns["find_highest_gradient"](model).reshape(1))[0]
        highest["clipped_grads_sha256"] = {name: digest([p.grad]) for name, p in model.named_parameters()}
        run.run(13)
        printed = {f"In [{n}]": text for n, text in run.printed.items() if text}
        book = train_model_case(run, True, clip_calls)
        later = train_model_case(run, False, clip_calls)
        scheds = schedules(run)
    finally:
        torch.nn.utils.clip_grad_norm_ = his_clip
        os.chdir(cwd)
        shutil.rmtree(work)

    doc = {**provenance(SCRIPT, commit=COMMIT),
           "format": "float32 values as their bits (uint32) or the SHA-256 of their bytes (little-endian, row-major; "
                     "`parameters_sha256` of a step: every parameter's bytes in named_parameters() order, one after the "
                     "other); Python floats as JSON numbers (the shortest decimal that reads back as the same double); "
                     "`python` says what was run.",
           "config": {k: v for k, v in run.ns["GPT_CONFIG_124M"].items()},
           "printed": printed, "schedules": scheds, "find_highest_gradient": highest,
           "train_model": [book, later],
           "clip_grad_norm": clip_cases(run.ns["find_highest_gradient"])}
    write_json(args.out, doc)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
